"""From record batches to tensors: a task's pieces streamed as pyarrow record batches, and
:func:`dataset`, the ``tf.data.Dataset`` over them."""

from __future__ import annotations

from .plan import ShardPlan, plan_columns, shard_plan
from .sources import DataError

DEFAULT_BATCH_SIZE = 1024
# Rows cross from Python into TensorFlow in chunks this large (rebatched to batch_size in C++):
# one generator call per chunk, not per batch, is what keeps up with plain pyarrow.
CHUNK_ROWS = 65536
CHUNK_BYTES = 16 << 20


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


def _pieces_batches(plan: ShardPlan, columns: list[str], batch_size: int, rng):
    order = list(plan.pieces)
    if rng is not None:
        order = [order[i] for i in rng.permutation(len(order))]
    for p in order:
        pf = plan.parquet_file(p.file)
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
    _, read_cols, _ = plan_columns(plan, columns, None)
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

    wanted, read_cols, schema = plan_columns(plan, columns, label)
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
