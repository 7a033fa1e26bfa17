"""The docs as the docs tests read them: the pages, the README, their ```python examples (with
the not-runnable mark, ``<!-- not runnable: WHY -->`` on the line before), and the reference
generators of docs/_ext/tony_reference.py."""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOT_RUNNABLE = re.compile(r"^<!--\s*not runnable:(.*?)-->\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*\{?([\w-]*)\}?")


def pages() -> list[Path]:
    """Every page of the site and the README (the generated references' sources aside)."""
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def reference():
    """docs/_ext/tony_reference.py, imported as Sphinx imports it."""
    ext = str(DOCS / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    return importlib.import_module("tony_reference")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the opening fence, 1-based
    source: str
    not_runnable: str | None  # the reason, when marked

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The page's ```python blocks, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        if lang == "python":
            before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mark = NOT_RUNNABLE.match(before.strip())
            why = mark.group(1).strip() if mark else None
            out.append(Example(page, start + 1, "\n".join(lines[start + 1 : j]), why))
        i = j + 1
    return out


def all_examples() -> list[Example]:
    return [e for p in pages() for e in examples(p)]


def prose(page: Path) -> str:
    """The page's text."""
    return page.read_text(encoding="utf-8")
