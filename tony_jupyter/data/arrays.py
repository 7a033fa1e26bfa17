"""The task's rows without TensorFlow, for PyTorch, JAX or plain NumPy code.

- :func:`batches`: Parquet files (the same ``paths``, ``columns``, ``label``, ``shard`` as
  :func:`~tony_jupyter.data.dataset`) as NumPy batches, streamed one row group at a time.
- :func:`torch_dataset`: the same batches as a ``torch.utils.data.IterableDataset`` of
  tensors; give it to ``DataLoader(ds, batch_size=None)``: it is batched already.
- :func:`torch_rows`: a ``--shard`` value (the task's rows of a DataFrame, Table or array,
  already in memory) as a map-style ``torch.utils.data.Dataset``, for ``DataLoader(...,
  batch_size=..., shuffle=True)``. It is this task's shard: no ``DistributedSampler`` is needed,
  and one would split it again.
"""

from __future__ import annotations

import inspect

from . import tfdata
from .batches import PieceReader, column_type, stream
from .plan import INDEX_PREFIX, plan_columns, shard_plan
from .sources import DataError


def _kind(field) -> tuple[str, tuple[int, ...]]:
    """('float' | 'num' | 'str', trailing shape) of a column, or DataError naming it."""
    kind, width, _ = column_type(field)
    if kind in ("float", "num", "str"):
        return kind, width
    raise DataError(
        f"column {field.name!r} has type {field.type}, which cannot become an array of numbers "
        "or strings. Cast it before writing (e.g. df[col] = df[col].astype('int64')), or leave "
        "it out with columns=[...]"
    )


class _Columns:
    """Turns a pyarrow Table or RecordBatch into what :func:`batches` yields."""

    def __init__(self, schema, wanted: list[str], label: str | None, stack: bool):
        self.wanted, self.label, self.stack = wanted, label, stack
        self.read = [*wanted, *([label] if label else [])]
        self.kinds = {c: _kind(schema.field(c)) for c in self.read}
        bad = [c for c in wanted if self.kinds[c][0] == "str"]
        if stack and bad:
            raise DataError(
                f"stack=True makes one float32 matrix, but column {bad[0]!r} holds strings; "
                "leave it out with columns=[...] or use stack=False (a dict of arrays)"
            )

    def __call__(self, t):
        import numpy as np

        from .tfdata import _to_numpy

        cols = {c: _to_numpy(c, t.column(c), *self.kinds[c]) for c in self.read}
        y = cols.pop(self.label) if self.label else None
        if self.stack:
            widths = {c: int(np.prod(self.kinds[c][1] or 1)) for c in self.wanted}
            x = np.empty((t.num_rows, sum(widths.values())), np.float32)
            at = 0
            for c, w in widths.items():
                x[:, at : at + w] = cols[c].reshape(t.num_rows, w)
                at += w
            return x if y is None else (x, y)
        return cols if y is None else (cols, y)


class Batches:
    """This task's rows as NumPy batches; every ``iter()`` is a new pass (with ``shuffle``, in
    a new order, reproducible with ``seed``). ``len()`` is the number of batches in a pass."""

    def __init__(self, paths, columns, label, batch_size, shuffle, seed, stack, drop, shard):
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise DataError(f"batch_size must be at least 1, not {batch_size}")
        self.plan = shard_plan(paths, shard)
        wanted, read_cols, schema = plan_columns(self.plan, columns, label)
        self.columns = _Columns(schema, wanted, label, stack)
        self.reader = PieceReader(self.plan, read_cols)
        self.shuffle, self.seed, self.drop, self.passes = shuffle, seed, drop, 0

    @property
    def rows(self) -> int:
        return self.plan.rows

    def __len__(self) -> int:
        n, b = self.plan.rows, self.batch_size
        return n // b if self.drop else -(-n // b)

    def __iter__(self):
        import numpy as np

        rng = None
        if self.shuffle:
            rng = np.random.default_rng(None if self.seed is None else [self.seed, self.passes])
        self.passes += 1
        for b in stream(self.reader, self.batch_size, rng):
            if self.drop and b.num_rows < self.batch_size:
                return
            yield self.columns(b)


def batches(paths, *args, **kwargs) -> Batches:
    """This task's rows of Parquet ``paths`` as NumPy batches: ``{column: array}``, or one
    float32 matrix with ``stack=True``; ``(features, label)`` with ``label=``. Which rows, and
    the arguments, as :func:`~tony_jupyter.data.dataset` (all but ``shuffle_window``: shuffling
    is within windows of max(8 × batch_size, 65536) rows). Shards may differ by a row group: in
    a synchronous loop (DDP, ``psum``) run the same number of steps on every task."""
    bound = _OPTIONS.bind(paths, *args, **kwargs)
    bound.apply_defaults()
    return Batches(*bound.arguments.values())


# dataset()'s parameters are the one statement of the read options; batches() takes them all
# but its shuffle window, positionally or by name, and shows them (help(), completion).
_OPTIONS = inspect.signature(tfdata.dataset)
_OPTIONS = _OPTIONS.replace(
    parameters=[p for p in _OPTIONS.parameters.values() if p.name != "shuffle_window"],
    return_annotation="Batches",
)
batches.__signature__ = _OPTIONS  # type: ignore[attr-defined]


def _tensors(value):
    import torch

    if isinstance(value, dict):
        return {k: _tensors(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_tensors(v) for v in value)
    # Arrow hands out read-only views; a tensor over one could be written to
    return torch.from_numpy(value if value.flags.writeable else value.copy())


def torch_dataset(paths, **kwargs):
    """:func:`batches` as a ``torch.utils.data.IterableDataset`` of tensors (one element per
    batch: use ``DataLoader(ds, batch_size=None)``, or iterate it directly)."""
    from torch.utils.data import IterableDataset

    source = batches(paths, **kwargs)

    class ParquetBatches(IterableDataset):
        rows = source.rows

        def __len__(self) -> int:
            return len(source)

        def __iter__(self):
            return (_tensors(b) for b in source)

    return ParquetBatches()


def torch_rows(value, label: str | None = None, columns: list[str] | None = None):
    """A ``--shard`` value (a pandas DataFrame, pyarrow Table or NumPy array: this task's rows)
    as a map-style ``torch.utils.data.Dataset`` (a ``TensorDataset``). Row ``i`` is
    ``(features, label)`` with ``label=``, else ``(features,)``; features are a float32 tensor
    of the feature columns (default: all but ``label``); an array's rows keep its dtype."""
    import numpy as np
    import torch
    from torch.utils.data import TensorDataset

    from ..core import tables

    if tables.kind(value) == "numpy":
        if label is not None or columns is not None:
            raise DataError("an array has no columns: torch_rows(array) takes no label=/columns=")
        return TensorDataset(torch.from_numpy(np.ascontiguousarray(value)))
    try:
        table = tables.to_arrow(value)
    except tables.NotATable as e:
        raise DataError(f"torch_rows: {e}") from None
    if label is not None and label not in table.schema.names:
        raise DataError(f"no column {label!r}; the columns are {', '.join(table.schema.names)}")
    if columns is None:
        wanted = [n for n in table.schema.names if n != label and not n.startswith(INDEX_PREFIX)]
    else:
        wanted = [c for c in columns if c != label]
    missing = [c for c in wanted if c not in table.schema.names]
    if missing:
        raise DataError(
            f"no column {', '.join(map(repr, missing))}; the columns are "
            f"{', '.join(table.schema.names)}"
        )
    out = _Columns(table.schema, wanted, label, stack=True)(table)
    if label is None:
        return TensorDataset(_tensors(out))
    return TensorDataset(*_tensors(out))
