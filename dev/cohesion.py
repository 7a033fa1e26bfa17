"""The cohesion rule, checked (dev/lint runs it): every module of the package names its one
responsibility in the first line of its docstring.

Fails (exit 1) for a module with code but no docstring, or whose docstring's first line is
empty or too short to name anything. Warns (exit 0) for a module over SIZE_ALARM lines: size is
not the rule (CONTRIBUTING.md: split when a second reason to change appears, not when a module
grows), but a module that long is worth a look for one. An empty ``__init__.py`` has nothing
to name. Usage: ``python dev/cohesion.py [ROOT ...]`` (default: tony_jupyter).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SIZE_ALARM = 900
MIN_WORDS = 3  # "The AM." names nothing; "LocalProvider: one executor per task" does


def problems(path: Path) -> tuple[list[str], list[str]]:
    """(failures, warnings) of one module."""
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    warnings = []
    if lines > SIZE_ALARM:
        warnings.append(
            f"{path}: {lines} lines (over {SIZE_ALARM}): does it still have one responsibility?"
        )
    tree = ast.parse(text, filename=str(path))
    if not tree.body:
        return [], warnings  # an empty module (a package's __init__): nothing to name
    doc = ast.get_docstring(tree)
    if not doc:
        return [f"{path}: no docstring naming its responsibility"], warnings
    first = doc.strip().splitlines()[0].strip()
    if len(first.split()) < MIN_WORDS:
        return [f"{path}: its docstring's first line ({first!r}) names no responsibility"], (
            warnings
        )
    return [], warnings


def main(roots: list[str]) -> int:
    failures: list[str] = []
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            if "labextension" in path.parts or "node_modules" in path.parts:
                continue
            failed, warned = problems(path)
            failures += failed
            for w in warned:
                print(f"warning: {w}")
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["tony_jupyter"]))
