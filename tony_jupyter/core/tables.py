"""Tables and arrays as Arrow: the one conversion ``--shard`` (Parquet) and ``--pull`` (Arrow IPC)
share, so what comes out is the type that went in: a pandas DataFrame comes back a DataFrame
(index and dtypes included, through pandas' own Arrow metadata), a pyarrow Table a Table, a NumPy
array an array of the same dtype and trailing shape.

An array becomes one column, ``values``; an array of more than one dimension stores each row as
a fixed-size list of its flattened trailing dimensions. The kind, dtype and shape travel in the
schema metadata (key ``tony_jupyter``), so every file is self-describing.
"""

from __future__ import annotations

import json
import sys

META_KEY = b"tony_jupyter"
ARRAY_COLUMN = "values"


class NotATable(TypeError):
    """The value is not a DataFrame, Table or array, or cannot become Arrow."""


def kind(value) -> str | None:
    """'pandas', 'arrow' or 'numpy' for the values that travel as Arrow; None otherwise.
    Imports nothing: a value of a library nobody imported cannot be one of its types."""
    pa, np = sys.modules.get("pyarrow"), sys.modules.get("numpy")
    if pa is not None and isinstance(value, pa.Table):
        return "arrow"
    if np is not None and isinstance(value, np.ndarray):
        return "numpy"
    mod = type(value).__module__
    if mod.startswith("pandas") and type(value).__name__ == "DataFrame":
        return "pandas"
    return None


def to_arrow(value, name: str = "value"):
    """The value as a pyarrow Table carrying what :func:`from_arrow` needs to rebuild it."""
    k = kind(value)
    if k is None:
        raise NotATable(
            f"{name!r} is a {type(value).__module__}.{type(value).__qualname__}, not a pandas "
            "DataFrame, pyarrow Table or NumPy array"
        )
    if k == "arrow":
        table, meta = value, {"kind": "arrow"}
    elif k == "pandas":
        table, meta = _from_pandas(value, name), {"kind": "pandas"}
    else:
        table, meta = _from_numpy(value, name)
    md = dict(table.schema.metadata or {})
    md[META_KEY] = json.dumps(meta).encode()
    return table.replace_schema_metadata(md)


def from_arrow(table):
    """The inverse of :func:`to_arrow`; a table without our metadata stays a Table."""
    import numpy as np

    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    k = meta.get("kind", "arrow")
    if k == "pandas":
        return table.to_pandas()
    if k == "numpy":
        dtype, trailing = np.dtype(meta["dtype"]), tuple(meta["shape"])
        col = table.column(ARRAY_COLUMN).combine_chunks()
        if trailing:
            col = col.flatten()
        flat = col.to_numpy(zero_copy_only=False)
        return flat.astype(dtype, copy=False).reshape((table.num_rows, *trailing))
    md = {k: v for k, v in (table.schema.metadata or {}).items() if k != META_KEY}
    return table.replace_schema_metadata(md or None)


def _from_pandas(df, name: str):
    import pyarrow as pa

    try:
        # The index always travels (a RangeIndex too): a shard keeps its rows' labels.
        return pa.Table.from_pandas(df, preserve_index=True)
    except (pa.ArrowException, TypeError, ValueError) as e:
        for col in df.columns:
            try:
                pa.array(df[col])
            except (pa.ArrowException, TypeError, ValueError) as ce:
                raise NotATable(
                    f"column {col!r} of {name!r} (dtype {df[col].dtype}) cannot become an Arrow "
                    f"column: {ce}. Give it one type, e.g. {name}[{col!r}] = "
                    f"{name}[{col!r}].astype(str), or drop it"
                ) from None
        raise NotATable(f"{name!r} cannot become an Arrow table: {e}") from None


def _from_numpy(arr, name: str) -> tuple:
    import numpy as np
    import pyarrow as pa

    if arr.ndim == 0:
        raise NotATable(f"{name!r} is a 0-d array (a scalar); only arrays with rows can be split")
    if arr.dtype.kind in "cV":
        raise NotATable(
            f"{name!r} has dtype {arr.dtype}, which Arrow cannot store; use a numeric, bool or "
            "string array, or a DataFrame"
        )
    trailing = arr.shape[1:]
    width = int(np.prod(trailing)) if trailing else 1
    try:
        values = pa.array(np.ascontiguousarray(arr).reshape(-1))
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise NotATable(f"{name!r} (dtype {arr.dtype}) cannot become Arrow: {e}") from None
    if trailing:
        values = pa.FixedSizeListArray.from_arrays(values, width)
    meta = {"kind": "numpy", "dtype": arr.dtype.str, "shape": list(trailing)}
    return pa.table({ARRAY_COLUMN: values}), meta


# --- --pull: Arrow IPC (zstd) instead of pickle ------------------------------------------------


def to_ipc(value) -> bytes:
    import pyarrow as pa

    table = to_arrow(value)
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=options) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes):
    import pyarrow as pa

    with pa.ipc.open_stream(pa.py_buffer(data)) as r:
        return from_arrow(r.read_all())


def split_tabular(names: dict) -> tuple[dict[str, bytes], dict]:
    """Pulled names that travel as Arrow IPC, and the rest (pickled). A table Arrow cannot
    hold (a DataFrame with a mixed object column) falls back to pickle."""
    arrow, rest = {}, {}
    for name, value in names.items():
        if kind(value) is not None:
            try:
                arrow[name] = to_ipc(value)
                continue
            except NotATable:
                pass
        rest[name] = value
    return arrow, rest
