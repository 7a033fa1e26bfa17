"""What ships with a cell: its source, the notebook names it reads (cloudpickled), and which
names to bring back. Everything here is checked before anything is submitted. Its metadata
travels as :class:`BundleInfo` (the job directory's ``bundle.json``), beside the source
(``cell.py``) and the names (``names.pkl``)."""

from __future__ import annotations

import ast
import builtins
import json
import symtable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BundleError
from .records import Record

if TYPE_CHECKING:
    from .shards import ShardPlan
    from .srcdir import SrcDir

CELL_FILENAME = "<tony-cell>"


@dataclass(frozen=True)
class Bundle:
    source: str
    names: bytes  # cloudpickle of {name: value}
    pushed: tuple[str, ...]
    filename: str = CELL_FILENAME
    shards: ShardPlan | None = None  # --shard names, staged as Parquet, never pickled
    src: SrcDir | None = None  # the directory shipped with it (srcdir.py)


@dataclass(frozen=True)
class BundleInfo(Record):
    """``bundle.json``: what an executor needs of the bundle besides its source and names."""

    filename: str = CELL_FILENAME  # what tracebacks name the cell (a script's own path)
    pull: tuple[str, ...] = ()  # the names the chief sends back
    pushed: tuple[str, ...] = ()
    shards: dict[str, Any] | None = None  # the --shard manifest (shards.py)
    src: dict[str, Any] | None = None  # the shipped directory (srcdir.SrcDir.meta)
    argv: tuple[str, ...] | None = None  # %tony run SCRIPT ARGS: its sys.argv

    def to_json(self) -> dict[str, Any]:
        # What is not there is left out, as every launcher has written it.
        return {k: v for k, v in super().to_json().items() if v is not None}

    @classmethod
    def of(
        cls,
        pull: tuple[str, ...] | list[str],
        bundle: Bundle,
        argv: list[str] | None = None,
        shards: dict[str, Any] | None = None,
    ) -> BundleInfo:
        return cls(
            filename=bundle.filename,
            pull=tuple(pull),
            pushed=tuple(bundle.pushed),
            shards=shards,
            src=bundle.src.meta() if bundle.src is not None else None,
            argv=tuple(argv) if argv else None,
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    @classmethod
    def read(cls, path: Path) -> BundleInfo:
        """The job's ``bundle.json``; a ValueError naming the file when it is not one."""
        try:
            return cls.checked(json.loads(path.read_text()))
        except ValueError as e:
            raise ValueError(f"{path}: {e}; the job's files are damaged, submit it again") from None


def check_syntax(source: str, filename: str = CELL_FILENAME) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        where = f"line {e.lineno}" + (f", column {e.offset}" if e.offset else "")
        text = f": {e.text.strip()}" if e.text else ""
        raise BundleError(
            f"syntax error in the cell at {where}: {e.msg}{text} (nothing was submitted; fix the "
            "cell and run it again)"
        ) from None


def free_names(source: str) -> list[str]:
    """Names the cell reads that it does not bind at top level (so they must come from the
    notebook), in first-use order; builtins excluded."""
    table = symtable.symtable(source, CELL_FILENAME, "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    found: dict[str, None] = {}

    def visit(t: symtable.SymbolTable, top: bool) -> None:
        for s in t.get_symbols():
            name = s.get_name()
            reads_global = s.is_referenced() and (top or s.is_global())
            if top and s.is_referenced() and not (s.is_assigned() or s.is_imported()):
                found.setdefault(name)
            elif not top and reads_global and name not in bound:
                found.setdefault(name)
        for child in t.get_children():
            visit(child, False)

    visit(table, True)
    return [n for n in found if not hasattr(builtins, n) and not n.startswith("__")]


def bound_names(source: str) -> set[str]:
    """Names the cell binds at top level (assignments, imports, defs)."""
    table = symtable.symtable(source, CELL_FILENAME, "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


def make_bundle(
    source: str, namespace: dict, extra: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> Bundle:
    """Check the cell and pickle the names it needs from ``namespace`` (the notebook's);
    names in ``exclude`` (the ``--shard`` names) travel another way."""
    check_syntax(source)
    wanted = [n for n in dict.fromkeys([*free_names(source), *extra]) if n not in exclude]
    missing = [n for n in wanted if n not in namespace]
    if missing:
        listed = ", ".join(repr(n) for n in missing)
        raise BundleError(
            f"the cell uses {listed}, not defined in the notebook; define "
            f"{'it' if len(missing) == 1 else 'them'} in an earlier cell or inside this cell "
            "(nothing was submitted)"
        )
    import cloudpickle  # the notebook side: an executor imports this module, never packs

    payload = {}
    for name in wanted:
        try:
            cloudpickle.dumps(namespace[name])
        except Exception as e:  # noqa: BLE001 - pickling raises anything: TypeError, PicklingError
            raise BundleError(
                f"cannot ship {name!r} to the tasks: {type(e).__name__}: {e}. Create it inside "
                "the cell instead, or delete it from the notebook if the cell does not need it "
                "(nothing was submitted)"
            ) from None
        payload[name] = namespace[name]
    return Bundle(source=source, names=cloudpickle.dumps(payload), pushed=tuple(wanted))


def split_last_expression(source: str) -> tuple[ast.Module, ast.Expression | None]:
    """The cell body to exec, and its last expression (the cell's value) to eval, if any."""
    tree = ast.parse(source, filename=CELL_FILENAME)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        return tree, ast.Expression(body=last.value)  # type: ignore[attr-defined]
    return tree, None
