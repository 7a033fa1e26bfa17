"""Which rows the calling task reads: its place among the readers (from ``TF_CONFIG``), and the
pieces (row groups, or row ranges of them) dealt to it. ``plan_pieces`` is pure arithmetic."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.protocol.taskid import task_id
from .sources import DataError, open_parquet, resolve

INDEX_PREFIX = "__index_level_"  # pandas' index column: not a feature unless asked for


@dataclass(frozen=True)
class Piece:
    """Rows [start, stop) of one row group of one file (stop None: the whole group)."""

    file: int
    row_group: int
    start: int = 0
    stop: int | None = None


def reader_index(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(index, count) of the calling task among the readers, from TF_CONFIG (or TonY's
    CLUSTER_SPEC/JOB_NAME/TASK_INDEX); (0, 1) for the evaluator, ps, or outside a job."""
    env = os.environ if env is None else env
    cluster: dict | None = None
    me: str | None = None
    cfg = json.loads(env.get("TF_CONFIG") or "{}")
    if cfg.get("cluster") and cfg.get("task"):
        cluster, me = cfg["cluster"], task_id(cfg["task"]["type"], cfg["task"].get("index", 0))
    elif env.get("CLUSTER_SPEC") and env.get("JOB_NAME"):
        cluster = json.loads(env["CLUSTER_SPEC"])
        me = task_id(env["JOB_NAME"], env.get("TASK_INDEX", "0"))
    if not cluster:
        return 0, 1
    readers = [f"chief:{i}" for i in range(len(cluster.get("chief", [])))]
    if not (readers and cluster.get("ps")):  # ParameterServerStrategy: the chief reads alone
        readers += [f"worker:{i}" for i in range(len(cluster.get("worker", [])))]
    return (readers.index(me), len(readers)) if me in readers else (0, 1)


def plan_pieces(row_groups: list[list[int]], index: int, count: int) -> tuple[str, list[Piece]]:
    """Reader ``index`` of ``count``'s pieces, given each file's row-group row counts.
    Returns the mode ('file', 'row_group' or 'rows') and the pieces in file order."""
    if count == 1:
        return "file", [
            Piece(f, g) for f, groups in enumerate(row_groups) for g in range(len(groups))
        ]
    if len(row_groups) >= count:
        mine = range(index, len(row_groups), count)
        return "file", [Piece(f, g) for f in mine for g in range(len(row_groups[f]))]
    groups = [(f, g, n) for f, gs in enumerate(row_groups) for g, n in enumerate(gs) if n]
    total = sum(n for _, _, n in groups)
    if total < count:
        raise DataError(
            f"{count} readers but only {total} rows: every task needs at least one row. Use "
            f"fewer workers (at most {total}), or more data"
        )
    if len(groups) >= count:
        # Largest first to the least-loaded reader: row counts balance within one row group.
        load, owner = [0] * count, {}
        for f, g, n in sorted(groups, key=lambda x: (-x[2], x[0], x[1])):
            r = min(range(count), key=lambda i: (load[i], i))
            load[r] += n
            owner[(f, g)] = r
        return "row_group", [Piece(f, g) for f, g, _ in groups if owner[(f, g)] == index]
    # Fewer row groups than readers: contiguous row ranges across the groups.
    base, extra = divmod(total, count)
    lo = index * base + min(index, extra)
    hi = lo + base + (1 if index < extra else 0)
    pieces, pos = [], 0
    for f, g, n in groups:
        a, b = max(lo, pos), min(hi, pos + n)
        if a < b:
            pieces.append(Piece(f, g, a - pos, b - pos))
        pos += n
    return "rows", pieces


@dataclass
class ShardPlan:
    """What one reader reads: how the files were split, and its pieces."""

    fs: Any  # a pyarrow FileSystem
    files: list[str]
    index: int
    count: int
    mode: str  # 'file', 'row_group' or 'rows'
    pieces: list[Piece]
    rows: int  # this reader's rows
    opened: dict  # file number -> ParquetFile (footers already read)


def shard_plan(paths, shard: tuple[int, int] | bool = True) -> ShardPlan:
    """Resolve ``paths`` and pick this reader's pieces (see the package docstring)."""
    fs, files = resolve(paths)
    if not files:
        raise DataError(f"{paths!r} holds no data files (only _SUCCESS/.crc-like files)")
    index, count = reader_index() if shard is True else (0, 1) if shard is False else shard
    if not 0 <= index < count:
        raise DataError(f"shard={shard!r}: the index must be in [0, {count})")
    # Footers: every file's when row groups are dealt out, else only this reader's files.
    by_file = len(files) >= count
    own = range(index, len(files), count) if by_file else range(len(files))
    opened = {f: open_parquet(fs, files[f]) for f in own}
    row_groups = [
        [opened[f].metadata.row_group(g).num_rows for g in range(opened[f].num_row_groups)]
        if f in opened
        else [0]  # another reader's file: only its existence matters
        for f in range(len(files))
    ]
    mode, pieces = plan_pieces(row_groups, index, count)
    rows = sum(
        (p.stop - p.start) if p.stop is not None else row_groups[p.file][p.row_group]
        for p in pieces
    )
    return ShardPlan(fs, files, index, count, mode, pieces, rows, opened)


def plan_columns(plan: ShardPlan, columns, label) -> tuple[list[str], list[str], Any]:
    """(feature columns, columns to read, schema), checked against every opened footer."""
    schema = next(iter(plan.opened.values())).schema_arrow
    if columns is None:
        wanted = [n for n in schema.names if n != label and not n.startswith(INDEX_PREFIX)]
    else:
        wanted = [c for c in columns if c != label]
    read_cols = [*wanted, *([label] if label else [])]
    for f, pf in plan.opened.items():
        have = pf.schema_arrow.names
        missing = [c for c in read_cols if c not in have]
        if missing:
            raise DataError(
                f"no column {', '.join(map(repr, missing))} in {plan.files[f]}; its columns "
                f"are {', '.join(have)}"
            )
    if not wanted:
        raise DataError("no feature columns: pass columns=[...] naming at least one")
    return wanted, read_cols, schema
