"""``dataset()``: a task's record batches as a ``tf.data.Dataset``.

Rows cross from Python into TensorFlow in chunks of up to ``CHUNK_ROWS`` rows (or
``CHUNK_BYTES``) through ``Dataset.from_generator``, and are rebatched to ``batch_size`` in C++:
one generator call per chunk, not per batch. (A zero-copy variant, Arrow buffers handed over
through DLPack with a read-ahead thread, measured slower than this in the same runs of
bench/data.py on the 2-core machine; it is in the history, commit d915013.)
"""

from __future__ import annotations

from .batches import DEFAULT_BATCH_SIZE, stream
from .plan import plan_columns, shard_plan
from .sources import DataError

CHUNK_ROWS = 65536
CHUNK_BYTES = 16 << 20


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
    ``shuffle_window`` rows (default max(8 × batch_size, 65536)); ``shard``: see the package
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
        for b in stream(plan, read_cols, chunk, rng, shuffle_window):
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
