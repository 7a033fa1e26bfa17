"""The package's layout as CONTRIBUTING describes it: the top level holds the notebook's front
door and the task's API, one folder per side and the shared core; two modules share a file name
only where CONTRIBUTING's table says why (one idea seen from each side)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tony_jupyter"

FRONT_DOOR = {"__init__", "cli", "commands", "job", "magics", "options", "session", "runtime"}
PACKAGES = {"am", "core", "data", "executor", "launcher", "server_ext", "widgets"}


def test_the_top_level_is_the_front_door_the_sides_and_the_core() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert modules == FRONT_DOOR, (
        f"new at the top level: {sorted(modules - FRONT_DOOR)} (a module every side shares goes "
        f"in core/; one side's, in its folder); gone: {sorted(FRONT_DOOR - modules)}"
    )
    assert packages == PACKAGES


def shared_names() -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for p in PACKAGE.rglob("*.py"):
        if p.name == "__init__.py" or "labextension" in p.parts:
            continue
        where[p.name].append(str(p.parent.relative_to(PACKAGE)))
    return {name: dirs for name, dirs in where.items() if len(dirs) > 1}


def listed_names() -> set[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("### One name on several sides", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([\w.]+\.py)`", row.split("|")[1]))
    return names


def test_every_file_name_two_modules_share_is_listed_with_its_reason() -> None:
    shared = shared_names()
    listed = listed_names()
    unlisted = {name: dirs for name, dirs in shared.items() if name not in listed}
    assert not unlisted, (
        f"modules sharing a file name that CONTRIBUTING's 'One name on several sides' does not "
        f"list: {unlisted}; rename one, or add its row with the one idea both serve"
    )
    stale = listed - set(shared)
    assert not stale, f"CONTRIBUTING lists names no two modules share any more: {sorted(stale)}"
