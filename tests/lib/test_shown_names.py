"""The pages' scripts and the server-side templates and emails escape names alike: the
same rule in frontend/src/format.js and partdash/lib/shown.py."""

import json
import subprocess

import pytest

from partdash.lib.quoting import holds_invisible, invisible
from partdash.lib.shown import shown
from tests.conftest import ROOT

NAMES = [
    "orders\u202etxt.exe",  # right-to-left override
    "a\u2066b\u2069c\u200fd",  # isolates, right-to-left mark
    "zero\u200bwidth\ufeff",  # zero-width space, BOM
    "line\nbreak\tand\rreturn\x00\x1b[31m",  # C0 controls
    "next\x85line\u2028sep\u2029par",  # C1, line and paragraph separators
    "tag\U000e0041",  # a tag character (outside the BMP)
    "commandes_été_東京",  # letters stay as they are
]


def shown_by_the_pages(names: list[str]) -> list[str]:
    script = (
        "import { shown } from './frontend/src/format.js';"
        "const names = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(names.map((name) => shown(name))));"
    )
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def test_the_pages_escape_names_as_the_templates_and_emails_do():
    assert shown_by_the_pages(NAMES) == [shown(name) for name in NAMES]


def test_an_escaped_name_holds_no_control_or_bidi_character_and_letters_stay():
    assert shown("orders\u202etxt.exe") == "orders\\u202etxt.exe"
    assert shown("commandes_été_東京") == "commandes_été_東京"
    assert all(ch.isprintable() for name in NAMES for ch in shown(name))


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "tab\there",
        "bell\x07",
        "del\x7f",
        "line\nbreak",
        "é accent",
        "rtl\u202eevil",
        "zero\u200bwidth",
        "para\u2029graph",
        "emoji 🙂",
        "",
    ],
)
def test_holds_invisible_says_what_invisible_says_of_each_character(text):
    """The ASCII shortcut (one search) agrees with the character-by-character test."""
    assert holds_invisible(text) == any(invisible(char) for char in text)
