"""``tony_jupyter.data.dataset``: a ``tf.data.Dataset`` over Parquet files, sharded for the
calling task and streamed in record batches.

- **Where**: local paths or ``hdfs://`` URLs (read through WebHDFS: ``TONY_WEBHDFS_URL``, else
  ``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``, else the URL's host on
  port 9870), each a file, a directory (its ``*.parquet`` files) or a glob.
- **Which rows**: the calling task's share. The readers are ``chief:0`` (if any) and then the
  workers, in TensorFlow's input-pipeline order (``tf.distribute`` auto-sharding is switched off
  on the returned dataset, so rows are never sharded twice). With at least as many files as
  readers, each reader takes every N-th file; with fewer, row groups are dealt out so row counts
  balance; with fewer row groups than readers, contiguous row ranges (sizes within one row).
  The evaluator, parameter servers and code outside a job read everything. ``shard=(i, n)``
  overrides this (e.g. from a ``tf.distribute.InputContext``); ``shard=False`` switches it off.
- **Memory**: files are read with ``ParquetFile.iter_batches``, one record batch at a time, so a
  task holds a few batches, never the data set.
- **Elements**: ``features`` is a dict ``{column: tensor}`` (Keras models with named ``Input``
  layers take it as is); ``stack=True`` gives one ``float32`` matrix ``[batch, n_features]``
  instead. With ``label=``, elements are ``(features, label)``. Numeric and bool columns become
  tensors of their type, strings ``tf.string``, fixed-size lists (arrays of ``--shard``, or
  embeddings) ``[batch, k]``; anything else is an error naming the column.
"""

from __future__ import annotations

import getpass
import glob as globlib
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import urlparse

from .errors import TonyError

DEFAULT_BATCH_SIZE = 1024
# Rows cross from Python into TensorFlow in chunks this large (rebatched to batch_size in C++):
# one generator call per chunk, not per batch, is what keeps up with plain pyarrow.
CHUNK_ROWS = 65536
CHUNK_BYTES = 16 << 20
INDEX_PREFIX = "__index_level_"  # pandas' index column: not a feature unless asked for


class DataError(TonyError, ValueError):
    """Parquet input that cannot become the dataset asked for; the message names the fix."""


@dataclass(frozen=True)
class Piece:
    """Rows [start, stop) of one row group of one file (stop None: the whole group)."""

    file: int
    row_group: int
    start: int = 0
    stop: int | None = None


# --- which task am I --------------------------------------------------------------------------


def reader_index(env: dict | None = None) -> tuple[int, int]:
    """(index, count) of the calling task among the readers, from TF_CONFIG (or TonY's
    CLUSTER_SPEC/JOB_NAME/TASK_INDEX); (0, 1) for the evaluator, ps, or outside a job."""
    env = os.environ if env is None else env
    cluster, me = None, None
    cfg = json.loads(env.get("TF_CONFIG") or "{}")
    if cfg.get("cluster") and cfg.get("task"):
        cluster, me = cfg["cluster"], f"{cfg['task']['type']}:{cfg['task'].get('index', 0)}"
    elif env.get("CLUSTER_SPEC") and env.get("JOB_NAME"):
        cluster = json.loads(env["CLUSTER_SPEC"])
        me = f"{env['JOB_NAME']}:{env.get('TASK_INDEX', '0')}"
    if not cluster:
        return 0, 1
    readers = [f"chief:{i}" for i in range(len(cluster.get("chief", [])))]
    if not (readers and cluster.get("ps")):  # ParameterServerStrategy: the chief reads alone
        readers += [f"worker:{i}" for i in range(len(cluster.get("worker", [])))]
    return (readers.index(me), len(readers)) if me in readers else (0, 1)


# --- the sharding arithmetic (pure; unit-tested) ------------------------------------------------


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


# --- files ----------------------------------------------------------------------------------


def _webhdfs(url: str):
    try:
        from fsspec.implementations.webhdfs import WebHDFS
    except ImportError:
        raise DataError(
            f"{url}: reading hdfs:// needs fsspec (pip install fsspec), which WebHDFS access "
            "goes through"
        ) from None
    base = os.environ.get("TONY_WEBHDFS_URL") or _namenode_http()
    if not base:
        base = f"http://{urlparse(url).hostname or '127.0.0.1'}:9870"
    b = urlparse(base if "://" in base else f"http://{base}")
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    return WebHDFS(b.hostname, port=b.port or 9870, user=user, use_https=b.scheme == "https")


def _namenode_http() -> str | None:
    conf = os.environ.get("HADOOP_CONF_DIR")
    path = os.path.join(conf, "hdfs-site.xml") if conf else None
    if not path or not os.path.isfile(path):
        return None
    for prop in ET.parse(path).getroot().iter("property"):
        if (prop.findtext("name") or "").strip() == "dfs.namenode.http-address":
            return (prop.findtext("value") or "").strip() or None
    return None


def _is_data_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return not name.startswith(("_", ".")) and not name.endswith(".crc")


def resolve(paths) -> tuple[object, list[str]]:
    """(pyarrow filesystem, sorted file paths) for files, directories and globs."""
    import pyarrow.fs as pafs

    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise DataError("dataset() got no paths; pass a file, a directory or a glob")
    schemes = {str(p).startswith("hdfs://") for p in items}
    if len(schemes) > 1:
        raise DataError("mix of hdfs:// and local paths; read them as two datasets")
    files: list[str] = []
    if schemes == {True}:
        fs = _webhdfs(str(items[0]))
        for p in map(str, items):
            path = urlparse(p).path or "/"
            try:
                if any(c in path for c in "*?["):
                    found = sorted(fs.glob(path))
                elif fs.isdir(path):
                    found = sorted(x for x in fs.find(path) if x.endswith(".parquet"))
                else:
                    found = [path] if fs.exists(path) else []
            except OSError as e:
                raise DataError(f"cannot read {p} through WebHDFS: {e}") from None
            if not found:
                raise DataError(f"{p} matches no file on HDFS; check the path (hdfs dfs -ls)")
            files += [x for x in found if _is_data_file(x)]
        arrow_fs = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    else:
        for p in map(os.fspath, items):
            p = os.path.expanduser(p)
            if any(c in p for c in "*?["):
                found = sorted(x for x in globlib.glob(p, recursive=True) if os.path.isfile(x))
            elif os.path.isdir(p):
                found = sorted(globlib.glob(os.path.join(p, "**", "*.parquet"), recursive=True))
            else:
                found = [p] if os.path.isfile(p) else []
            if not found:
                what = "glob" if any(c in p for c in "*?[") else "path"
                raise DataError(f"{what} {p!r} matches no file; check the path (ls {p})")
            files += [os.path.abspath(x) for x in found if _is_data_file(x)]
        arrow_fs = pafs.LocalFileSystem()
    return arrow_fs, list(dict.fromkeys(files))


def _open(fs, path: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(fs.open_input_file(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"{path} is not a Parquet file ({str(e).splitlines()[0]}); pass only Parquet files, "
            "e.g. a glob like 'dir/*.parquet'"
        ) from None


# --- columns to tensors --------------------------------------------------------------------------


def _column_spec(field):
    """(tf dtype, trailing shape, kind) of a column, or DataError naming it."""
    import pyarrow as pa
    import tensorflow as tf

    t = field.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    width: tuple[int, ...] = ()
    if pa.types.is_fixed_size_list(t):
        width, t = (t.list_size,), t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return (
            tf.as_dtype(t.to_pandas_dtype()),
            width,
            "float" if pa.types.is_floating(t) else "num",
        )
    if not width and (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        return tf.string, (), "str"
    raise DataError(
        f"column {field.name!r} has type {field.type}, which cannot become a tensor. Cast it to "
        "a number or string before writing (e.g. df[col] = df[col].astype('int64')), or leave "
        "it out with columns=[...]"
    )


def _to_numpy(name: str, col, kind: str, width: tuple[int, ...]):
    import pyarrow as pa

    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if col.null_count and kind != "float":
        raise DataError(
            f"column {name!r} has null values, which a {kind} tensor cannot hold; fill them "
            "before writing (df[col].fillna(...)) or leave the column out"
        )
    if width:
        flat = col.flatten().to_numpy(zero_copy_only=False)
        return flat.reshape(len(col), *width)
    return col.to_numpy(zero_copy_only=False)


def _rebatch(batches, size: int):
    """Record batches of exactly ``size`` rows (the last may be short), slicing without copies
    where a batch already fits."""
    import pyarrow as pa

    buf, n = [], 0
    for b in batches:
        while b.num_rows:
            if not buf and b.num_rows >= size:
                yield b.slice(0, size)
                b = b.slice(size)
                continue
            take = min(size - n, b.num_rows)
            buf.append(b.slice(0, take))
            n += take
            b = b.slice(take)
            if n == size:
                yield pa.Table.from_batches(buf).combine_chunks().to_batches()[0]
                buf, n = [], 0
    if buf:
        yield pa.Table.from_batches(buf).combine_chunks().to_batches()[0]


def _shuffled(batches, window: int, rng):
    """Rows permuted within windows of ``window`` rows: memory stays one window."""
    import pyarrow as pa

    buf, n = [], 0
    for b in batches:
        buf.append(b)
        n += b.num_rows
        if n >= window:
            t = pa.Table.from_batches(buf)
            yield from t.take(rng.permutation(n)).to_batches()
            buf, n = [], 0
    if buf:
        t = pa.Table.from_batches(buf)
        yield from t.take(rng.permutation(n)).to_batches()


# --- the dataset ------------------------------------------------------------------------------


@dataclass
class ShardPlan:
    """What one reader reads: how the files were split, and its pieces."""

    fs: object
    files: list[str]
    index: int
    count: int
    mode: str  # 'file', 'row_group' or 'rows'
    pieces: list[Piece]
    rows: int  # this reader's rows
    opened: dict  # file number -> ParquetFile (footers already read)


def shard_plan(paths, shard: tuple[int, int] | bool = True) -> ShardPlan:
    """Resolve ``paths`` and pick this reader's pieces (see the module docstring)."""
    fs, files = resolve(paths)
    if not files:
        raise DataError(f"{paths!r} holds no data files (only _SUCCESS/.crc-like files)")
    index, count = reader_index() if shard is True else (0, 1) if shard is False else shard
    if not 0 <= index < count:
        raise DataError(f"shard={shard!r}: the index must be in [0, {count})")
    # Footers: every file's when row groups are dealt out, else only this reader's files.
    by_file = len(files) >= count
    own = range(index, len(files), count) if by_file else range(len(files))
    opened = {f: _open(fs, files[f]) for f in own}
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


def _columns(plan: ShardPlan, columns, label) -> tuple[list[str], list[str], object]:
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


def _pieces_batches(plan: ShardPlan, columns: list[str], batch_size: int, rng):
    order = list(plan.pieces)
    if rng is not None:
        order = [order[i] for i in rng.permutation(len(order))]
    for p in order:
        pf = plan.opened.get(p.file) or _open(plan.fs, plan.files[p.file])
        # One row group per read: a reader given many row groups buffers ahead across them,
        # and memory then grows with the file (measured: bench/data.py).
        it = pf.iter_batches(batch_size=batch_size, row_groups=[p.row_group], columns=columns)
        if p.stop is None:
            yield from it
            continue
        pos = 0
        for b in it:
            a, z = max(p.start - pos, 0), min(p.stop - pos, b.num_rows)
            if a < z:
                yield b.slice(a, z - a)
            pos += b.num_rows
            if pos >= p.stop:
                break


def _stream(plan: ShardPlan, columns, batch_size: int, rng=None, window: int | None = None):
    stream = _pieces_batches(plan, columns, batch_size, rng)
    if rng is not None:
        stream = _shuffled(stream, window or max(8 * batch_size, 65536), rng)
    return _rebatch(stream, batch_size)


def record_batches(
    paths,
    columns: list[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    shard: tuple[int, int] | bool = True,
):
    """This task's rows as pyarrow RecordBatches of ``batch_size`` rows (the last may be
    short): what :func:`dataset` streams, without TensorFlow."""
    plan = shard_plan(paths, shard)
    _, read_cols, _ = _columns(plan, columns, None)
    return _stream(plan, read_cols, int(batch_size))


def dataset(
    paths,
    columns: list[str] | None = None,
    label: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    shuffle: bool = False,
    seed: int | None = None,
    stack: bool = False,
    drop_remainder: bool = False,
    shard: tuple[int, int] | bool = True,
    shuffle_window: int | None = None,
):
    """A batched ``tf.data.Dataset`` over Parquet ``paths`` for this task.

    ``columns``: feature columns (default: all but ``label`` and pandas' index); ``label``: a
    column yielded apart, as ``(features, label)``; ``stack``: features as one float32 matrix
    instead of a dict; ``shuffle``: piece order per epoch and rows within windows of
    ``shuffle_window`` rows (default max(8 × batch_size, 65536)); ``shard``: see the module
    docstring. Use ``.repeat()`` and ``steps_per_epoch`` under MultiWorkerMirroredStrategy:
    shards may differ by a row group, and every worker must run the same number of steps.
    """
    import numpy as np
    import tensorflow as tf

    batch_size = int(batch_size)
    if batch_size < 1:
        raise DataError(f"batch_size must be at least 1, not {batch_size}")
    plan = shard_plan(paths, shard)

    wanted, read_cols, schema = _columns(plan, columns, label)
    specs = {c: _column_spec(schema.field(c)) for c in read_cols}
    if stack:
        bad = [c for c in wanted if specs[c][2] == "str"]
        if bad:
            raise DataError(
                f"stack=True makes one float32 matrix, but column {bad[0]!r} holds strings; "
                "leave it out with columns=[...] or use stack=False (a dict of tensors)"
            )

    def to_tensors(b):
        cols = {c: _to_numpy(c, b.column(c), specs[c][2], specs[c][1]) for c in read_cols}
        y = cols.pop(label) if label else None
        if stack:
            x = np.concatenate(
                [v.reshape(len(v), -1).astype(np.float32, copy=False) for v in cols.values()],
                axis=1,
            )
        else:
            x = cols
        return x if label is None else (x, y)

    row_bytes = sum(
        (specs[c][0].size if specs[c][0] != tf.string else 32) * int(np.prod(specs[c][1] or 1))
        for c in read_cols
    )
    chunk = max(batch_size, min(CHUNK_ROWS, CHUNK_BYTES // max(row_bytes, 1)))
    epochs = [0]

    def generate():
        rng = None
        if shuffle:  # a new order every pass (every .repeat() epoch), reproducible with seed
            rng = np.random.default_rng(None if seed is None else [seed, epochs[0]])
        epochs[0] += 1
        for b in _stream(plan, read_cols, chunk, rng, shuffle_window):
            yield to_tensors(b)

    def tensor_spec(c):
        dtype, width, _ = specs[c]
        return tf.TensorSpec((None, *width), dtype, name=c)

    if stack:
        total = sum(int(np.prod(specs[c][1])) if specs[c][1] else 1 for c in wanted)
        x_sig = tf.TensorSpec((None, total), tf.float32, name="features")
    else:
        x_sig = {c: tensor_spec(c) for c in wanted}
    sig = x_sig if label is None else (x_sig, tensor_spec(label))
    ds = tf.data.Dataset.from_generator(generate, output_signature=sig).prefetch(1)
    ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)  # == unbatch().batch(), one copy
    n = plan.rows // batch_size if drop_remainder else -(-plan.rows // batch_size)
    ds = ds.apply(tf.data.experimental.assert_cardinality(n))
    options = tf.data.Options()
    # Already sharded here: tf.distribute must not shard it again (for a generator dataset it
    # would fall back to taking every N-th batch).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options).prefetch(2)
