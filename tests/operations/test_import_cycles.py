"""`make lint`'s contract against import cycles inside a package (`acyclic_siblings` in
pyproject.toml), run as it is written there on a small package built for the test: a
cycle fails it however its imports are written (at module level, inside a function,
under `if TYPE_CHECKING:`) and at any depth; moving what is shared down passes it."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# How the import that closes the cycle is written.
BACK_IMPORTS = {
    "at module level": "from shop.orders.cart import items\n",
    "inside a function": (
        "def total():\n    from shop.orders.cart import items\n\n    return items\n"
    ),
    "under TYPE_CHECKING": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from shop.orders.cart import items\n"
    ),
}


def cycle_contract() -> dict:
    """The project's contract, the one `make lint` checks partdash with."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "acyclic_siblings"]
    assert contract["ancestors"] == [config["root_package"]]  # every package of partdash
    return contract


def write_config(folder: Path) -> Path:
    """The contract aimed at `shop` (JSON strings and lists are TOML too)."""
    contract = {**cycle_contract(), "ancestors": ["shop"]}
    lines = ['[tool.importlinter]\nroot_package = "shop"\n\n[[tool.importlinter.contracts]]']
    lines += [f"{key} = {json.dumps(value)}" for key, value in contract.items()]
    config = folder / "pyproject.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def write_package(folder: Path, modules: dict[str, str]) -> None:
    """`modules` maps a dotted name to its source; packages get an `__init__.py`."""
    for name, source in modules.items():
        path = folder.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        for package in path.relative_to(folder).parents:
            if package != Path("."):
                (folder / package / "__init__.py").touch()


def lint(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", "--config", write_config(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("how", BACK_IMPORTS)
def test_a_cycle_between_two_modules_of_a_package_fails_the_lint(tmp_path, how):
    write_package(
        tmp_path,
        {
            "shop.orders.cart": "from shop.orders import billing\n\nitems = []\n",
            "shop.orders.billing": BACK_IMPORTS[how],
        },
    )
    outcome = lint(tmp_path)
    assert outcome.returncode == 1, outcome.stdout + outcome.stderr
    assert "No cycles are allowed in shop.orders." in outcome.stdout
    assert "BROKEN" in outcome.stdout


def test_a_cycle_between_two_subpackages_fails_the_lint(tmp_path):
    """Modules deep in two packages side by side: the packages form the cycle."""
    write_package(
        tmp_path,
        {
            "shop.orders.cart": "from shop.stock.levels import count\n",
            "shop.stock.levels": "def count():\n    from shop.orders import cart\n",
        },
    )
    outcome = lint(tmp_path)
    assert outcome.returncode == 1, outcome.stdout + outcome.stderr
    assert "No cycles are allowed in shop." in outcome.stdout
    assert "- .orders -> .stock" in outcome.stdout or "- .stock -> .orders" in outcome.stdout


def test_what_both_share_moved_down_passes_the_lint(tmp_path):
    """The way partdash broke its cycles (alerts/records.py, polling's POLL_TASK): the
    shared part in a module below both, no import inside a function."""
    write_package(
        tmp_path,
        {
            "shop.orders.lines": "items = []\n",
            "shop.orders.cart": (
                "from shop.orders import billing\nfrom shop.orders.lines import items\n"
            ),
            "shop.orders.billing": "from shop.orders.lines import items\n",
        },
    )
    outcome = lint(tmp_path)
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    assert "KEPT" in outcome.stdout
