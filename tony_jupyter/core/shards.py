"""``%%tony --shard df``: a notebook table split into one Parquet file per reading task, so every
task sees ``df`` bound to its own rows.

Who reads (the *shard readers*, in this order, which is also TensorFlow's input-pipeline order
under MultiWorkerMirroredStrategy):

- ``chief:0`` (when there is a chief), then ``worker:0 .. worker:N-1``: each gets one shard.
  Shards are contiguous, disjoint, cover every row, and their sizes differ by at most one row.
- With a chief *and* parameter servers (ParameterServerStrategy), the workers only serve and the
  chief drives training: the chief is the only reader and gets every row.
- The evaluator gets every row (it evaluates on the whole set); parameter servers, and workers
  that only serve, get ``None``.

Layout in the job's staging directory (the local job dir, or the YARN HDFS staging dir)::

    shards/<name>/part-00000.parquet     rows of reader 0 (chief:0, or worker:0 without a chief)
    shards/<name>/part-00001.parquet     rows of reader 1 ...
    bundle.json["shards"] = {"readers": [task ids], "names": {name: {"kind", "rows",
                             "parts": [relative paths], "part_rows": [...]}}}

Each part's row groups hold at most ``ROW_GROUP_ROWS`` rows, balanced within the part, so a part
can also be streamed by ``tony_jupyter.data.dataset`` (one file per reader: sharded by file).
Nothing is pickled: the files are Parquet, the type is rebuilt from their schema metadata
(see :mod:`tony_jupyter.core.tables`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BundleError, SpecError
from .protocol import ExecutorEnv, task_id

if TYPE_CHECKING:
    from .spec import JobSpec

ROW_GROUP_ROWS = 65536
SHARDS_DIR = "shards"


def parse_names(values: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``--shard a,b --shard c`` → ('a', 'b', 'c')."""
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        raise SpecError(
            f"--shard: {', '.join(map(repr, bad))} is not a Python name; use --shard df or "
            "--shard a,b"
        )
    return tuple(dict.fromkeys(names))


def readers(spec: JobSpec) -> tuple[str, ...]:
    counts = {t.type: t.instances for t in spec.tasks}
    chief = (task_id("chief", 0),) if counts.get("chief") else ()
    if chief and counts.get("ps"):
        return chief
    return chief + tuple(f"worker:{i}" for i in range(counts.get("worker", 0)))


def bounds(rows: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous [start, stop) ranges covering ``rows``; sizes differ by at most 1."""
    base, extra = divmod(rows, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def row_group_size(rows: int, cap: int | None = None) -> int:
    """Rows per row group: at most ``cap`` (ROW_GROUP_ROWS), as even as possible across groups."""
    cap = cap or ROW_GROUP_ROWS
    groups = max(1, math.ceil(rows / cap))
    return max(1, math.ceil(rows / groups))


@dataclass(frozen=True)
class ShardPlan:
    """Checked in the notebook before anything is submitted; written by the backend's stage."""

    readers: tuple[str, ...]
    tables: tuple[tuple[str, Any], ...]  # (name, pyarrow.Table with tables.py metadata)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.tables)


def plan(values: list[str] | tuple[str, ...], namespace: dict, spec: JobSpec) -> ShardPlan | None:
    """Check the ``--shard`` names against the notebook; None when there are none."""
    names = parse_names(values)
    if not names:
        return None
    from . import tables

    who = readers(spec)
    if not who:
        raise SpecError("--shard needs a chief or at least one worker to read the shards")
    missing = [n for n in names if n not in namespace]
    if missing:
        raise BundleError(
            f"--shard {', '.join(map(repr, missing))}: not defined in the notebook; define it "
            "in an earlier cell (nothing was submitted)"
        )
    converted = []
    for name in names:
        value = namespace[name]
        try:
            table = tables.to_arrow(value, name)
        except tables.NotATable as e:
            raise BundleError(
                f"--shard {name!r}: {e}. --shard splits a table or array by rows; pass it as a "
                f"plain name instead (drop it from --shard) to ship the whole value "
                "(nothing was submitted)"
            ) from None
        if table.num_rows < len(who):
            raise BundleError(
                f"--shard {name!r}: {table.num_rows} rows for {len(who)} reading tasks "
                f"({', '.join(who)}): every task needs at least one row. Use --workers "
                f"{max(table.num_rows, 1)} or fewer, or more data (nothing was submitted)"
            )
        converted.append((name, table))
    return ShardPlan(who, tuple(converted))


def _parts(plan: ShardPlan):
    """(manifest, [(relative path, table slice)]): every part of every --shard name."""
    manifest: dict = {"readers": list(plan.readers), "names": {}}
    parts_out = []
    for name, table in plan.tables:
        parts, part_rows = [], []
        for i, (start, stop) in enumerate(bounds(table.num_rows, len(plan.readers))):
            rel = f"{SHARDS_DIR}/{name}/part-{i:05d}.parquet"
            parts_out.append((rel, table.slice(start, stop - start)))
            parts.append(rel)
            part_rows.append(stop - start)
        meta = json.loads((table.schema.metadata or {}).get(b"tony_jupyter", b"{}"))
        manifest["names"][name] = {
            "kind": meta.get("kind", "arrow"),
            "rows": table.num_rows,
            "parts": parts,
            "part_rows": part_rows,
        }
    return manifest, parts_out


def write(plan: ShardPlan, staging_dir: Path) -> dict:
    """Write every part under ``staging_dir/shards/`` (local backend); the manifest for
    bundle.json."""
    import pyarrow.parquet as pq

    manifest, parts = _parts(plan)
    for rel, piece in parts:
        (staging_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(piece, staging_dir / rel, row_group_size=row_group_size(len(piece)))
    return manifest


def staged(plan: ShardPlan) -> tuple[dict, dict[str, bytes]]:
    """The same parts as bytes, for a backend that uploads ``{relative path: bytes}`` (YARN's
    HDFS staging): (manifest for bundle.json, files). Localize each at the same relative path
    under the task's bundle dir (TONY_BUNDLE_DIR)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest, parts = _parts(plan)
    out = {}
    for rel, piece in parts:
        sink = pa.BufferOutputStream()
        pq.write_table(piece, sink, row_group_size=row_group_size(len(piece)))
        out[rel] = sink.getvalue().to_pybytes()
    return manifest, out


def files(manifest: dict | None) -> list[str]:
    """Every staged file, relative to the staging directory (what a remote backend uploads)."""
    if not manifest:
        return []
    return [p for entry in manifest["names"].values() for p in entry["parts"]]


def parts_for(manifest: dict | None, task_id: str, name: str | None = None) -> list[str]:
    """The parts ``task_id`` reads (of ``name``, or of every name): what a remote backend
    localizes into that task's container."""
    if not manifest:
        return []
    who = manifest["readers"]
    out = []
    for n, entry in manifest["names"].items():
        if name is not None and n != name:
            continue
        if task_id in who:
            out.append(entry["parts"][who.index(task_id)])
        elif task_id.startswith("evaluator:"):
            out += entry["parts"]
    return out


def bind(bundle_dir: Path, manifest: dict | None, task_id: str | None = None) -> dict:
    """In a task: {name: this task's shard} (see the module docstring for who gets what)."""
    if not manifest:
        return {}
    import pyarrow as pa
    import pyarrow.parquet as pq

    from . import tables

    task_id = task_id or os.environ.get(ExecutorEnv.var("task_id"), "worker:0")
    out: dict = {}
    for name in manifest["names"]:
        parts = parts_for(manifest, task_id, name)
        if not parts:
            out[name] = None
            continue
        table = pa.concat_tables([pq.read_table(bundle_dir / p) for p in parts])
        out[name] = tables.from_arrow(table)
    return out
