"""docs/settings.md lists every environment variable partdash reads, and only those.

The source is scanned for each form of read the code uses: django-environ
(`env.int("X", ...)`, `environ.Env().str("X")`), `os.environ["X"]`,
`os.environ.get/setdefault/pop("X")`, `os.getenv("X")`, `"X" in os.environ`, Node's
`process.env.X`, and the shell's `${X:-default}` (and `$X` where no script sets X).
A variable is listed when it has a row in one of the page's tables (first cell).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "settings.md"

NAME = r"([A-Z][A-Z0-9_]*)"
QUOTED = rf"""["']{NAME}["']"""
# Where an environment read's name begins: os.environ[...], os.environ.get(...),
# .setdefault(...), .pop(...), os.getenv(...), env.int(...), env(...), Env().str(...).
READ_OPENING = re.compile(
    r"\b(?:environ(?:\.(?:get|setdefault|pop))?\s*[\[(]|getenv\(|(?:\benv|\bEnv\(\))(?:\.\w+)?\()"
)
CODE_READS = [
    re.compile(READ_OPENING.pattern + rf"\s*{QUOTED}"),
    re.compile(rf"{QUOTED}\s+(?:not\s+)?in\s+os\.environ\b"),
    re.compile(rf"\bprocess\.env(?:\.{NAME}|\[\s*{QUOTED}\s*\])"),
    # A finding kind's own setting (`health.kinds.Setting`), read by its name.
    re.compile(rf"\bSetting\(\s*{QUOTED}"),
]
# ${X:-default}, ${X-default}, ${X:?message}, ${X:+alternative}, ${X:=default}: read from
# the environment whatever the script does with X afterwards.
SHELL_DEFAULTED = re.compile(rf"\$\{{{NAME}:?[-=?+]")
SHELL_PLAIN = re.compile(rf"\$(?:\{{{NAME}\}}|{NAME}\b)")
SHELL_ASSIGNED = re.compile(
    rf"^\s*(?:export\s+|local\s+|readonly\s+)?{NAME}=|\bfor\s+{NAME}\s+in\b"
)
# The shell's and the system's own variables, which are no setting of partdash.
SHELL_OWN = {"HOME", "PATH", "PWD", "UID", "EUID", "IFS", "USER", "SHELL", "TERM", "TMPDIR"}
# Reads whose variable's name comes from the user, not from the code.
ALLOWED_COMPUTED = {
    'options["password_env"]',  # addserver --password-env VAR
    "setting.name",  # a finding kind's `Setting`, found by CODE_READS where it is declared
}


def product_files() -> list[Path]:
    """Everything that runs as partdash, or sets it up, builds or benchmarks it."""
    files = [*ROOT.glob("partdash/**/*.py"), ROOT / "manage.py", ROOT / "frontend" / "build.mjs"]
    files += [*ROOT.glob("scripts/*.sh"), *ROOT.glob("scripts/*.py"), *ROOT.glob("bench/*.py")]
    files += [path for path in ROOT.glob("docker/*") if path.is_file()]
    return sorted(path for path in files if path.exists())


def suite_files() -> list[Path]:
    return sorted(ROOT.glob("tests/**/*.py"))


def names(pattern: re.Pattern, text: str) -> set[str]:
    return {name for match in pattern.finditer(text) for name in match.groups() if name}


def assigned_in(text: str) -> set[str]:
    """Shell variables a script sets itself (NAME=..., export NAME=..., for NAME in)."""
    return {name for line in text.splitlines() for name in names(SHELL_ASSIGNED, line)}


def reads_in(text: str, shell: bool, assigned: frozenset[str] = frozenset()) -> set[str]:
    """The environment variables `text` reads by name."""
    found = {name for pattern in CODE_READS for name in names(pattern, text)}
    if shell:
        found |= names(SHELL_DEFAULTED, text)
        found |= names(SHELL_PLAIN, text) - assigned - SHELL_OWN
    return found


def computed_reads(text: str) -> list[str]:
    """Environment reads whose name is an expression, not a string literal."""
    found = []
    for opening in READ_OPENING.finditer(text):
        rest = text[opening.end() :].lstrip()
        if rest[:1] in ("'", '"', ")"):
            continue
        depth, length = 0, len(rest)
        for index, char in enumerate(rest):
            if char in "([{":
                depth += 1
            elif char in ")]}" or (char == "," and depth == 0):
                if depth == 0:
                    length = index
                    break
                depth -= 1
        found.append(rest[:length].strip())
    return found


def reads(paths: list[Path]) -> dict[str, set[str]]:
    """Each variable read, with the files that read it."""
    shell = [path for path in paths if path.suffix == ".sh" or path.parent.name == "docker"]
    assigned = frozenset(name for path in shell for name in assigned_in(path.read_text()))
    found: dict[str, set[str]] = {}
    for path in paths:
        for name in reads_in(path.read_text(), path in shell, assigned):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def documented() -> set[str]:
    """Variables with a row of their own in docs/settings.md (named in its first cell)."""
    listed = set()
    for line in REFERENCE.read_text().splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            listed |= set(re.findall(rf"`{NAME}`", cells[1]))
    return listed


def test_every_environment_variable_the_code_reads_is_in_the_settings_reference():
    listed = documented()
    missing = {name: files for name, files in reads(product_files()).items() if name not in listed}
    assert not missing, "read by the code but not listed in docs/settings.md: " + "; ".join(
        f"{name} ({', '.join(sorted(files))})" for name, files in sorted(missing.items())
    )


def test_every_variable_in_the_settings_reference_is_read_somewhere():
    stale = sorted(documented() - set(reads(product_files() + suite_files())))
    assert not stale, f"listed in docs/settings.md but read nowhere: {', '.join(stale)}"


def test_the_code_reads_the_environment_by_literal_names_only():
    """A name computed at run time would escape the reference (and this test)."""
    computed = [
        f"{path.relative_to(ROOT)}: {expression}"
        for path in product_files()
        if path.suffix == ".py"
        for expression in computed_reads(path.read_text())
        if expression not in ALLOWED_COMPUTED
    ]
    assert not computed, "environment read by a computed name: " + "; ".join(computed)


def test_the_scan_finds_each_form_of_read():
    python = """
        DEBUG = env.bool("A_BOOL", default=False)
        URL = env.db_url(
            "A_URL", default="sqlite://")
        VAR = Path(environ.Env().str("A_VAR_DIR", default="var"))
        CALLED = env("A_CALL")
        one = os.environ["A_INDEX"]
        two = os.environ.get("A_GET", "x")
        os.environ.setdefault("A_SETDEFAULT", "y")
        three = os.getenv('A_GETENV')
        if "A_MEMBER" in os.environ: pass
    """
    assert reads_in(python, shell=False) == {
        "A_BOOL", "A_URL", "A_VAR_DIR", "A_CALL", "A_INDEX", "A_GET", "A_SETDEFAULT",
        "A_GETENV", "A_MEMBER",
    }  # fmt: skip
    assert reads_in("const maps = process.env.A_JS === '1';", shell=False) == {"A_JS"}
    shell = 'PORT=${A_PORT:-8000}\nX=${A_REQUIRED:?set it}\nLOCAL=1\necho "$LOCAL $A_PLAIN $HOME"'
    assert assigned_in(shell) == {"PORT", "X", "LOCAL"}
    assert reads_in(shell, shell=True, assigned=frozenset(assigned_in(shell))) == {
        "A_PORT", "A_REQUIRED", "A_PLAIN",
    }  # fmt: skip


def test_the_scan_flags_reads_by_computed_names():
    code = 'os.environ[f"PARTDASH_{scope}"]; os.getenv(name); env.int(key); os.environ["OK"]'
    assert computed_reads(code) == ['f"PARTDASH_{scope}"', "name", "key"]
    assert computed_reads('os.environ[options["password_env"]]') == ['options["password_env"]']
    assert computed_reads("env = environ.Env()\nos.environ.items()") == []
