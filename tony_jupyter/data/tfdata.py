"""``dataset()``: a task's rows as a ``tf.data.Dataset``.

The task's pieces are grouped into runs of at least ``CHUNK_ROWS`` rows (or ``CHUNK_BYTES``;
``batches.group_pieces``). A ``map`` reads each run whole (``read_row_group``) inside
``tf.numpy_function``, ``PARALLEL_READS`` runs at once in order, and the rows are rebatched to
``batch_size`` in C++. One Python call per run, none per batch; Parquet decoding releases the
GIL, so the reads overlap each other and TensorFlow's work. A task holds about
``PARALLEL_READS`` + 1 runs decoded (:func:`_parallel`). Measured against plain pyarrow in
bench/data.py; Arrow buffers handed over through DLPack measured slower there (in the history).

Files with a row group over ``STREAM_BYTES`` decoded (Spark's 128 MB row groups, pandas' 1M-row
ones when wide) would make that a lot of memory, so they are streamed page by page instead, in
chunks, through ``Dataset.from_generator`` (:func:`_streamed`): slower (0.5-0.9x pyarrow in
bench/data.py when it was the only design), and it holds one row group's column chunks and a
few chunks, not a few whole row groups decoded. Measured over 3 files of one 1M-row row group
(68.7 MiB decoded) each: RSS grew 325 MiB streamed, 409 MiB read whole two at a time.
"""

from __future__ import annotations

from .batches import (
    DEFAULT_BATCH_SIZE,
    PieceReader,
    column_type,
    group_pieces,
    piece_rows,
    stream,
)
from .plan import plan_columns, shard_plan
from .sources import DataError

CHUNK_ROWS = 65536
CHUNK_BYTES = 16 << 20
PARALLEL_READS = 2
STREAM_BYTES = 64 << 20


def _column_spec(field):
    """(tf dtype, trailing shape, kind) of a column, or DataError naming it."""
    import tensorflow as tf

    kind, width, t = column_type(field)
    if kind in ("float", "num"):
        return tf.as_dtype(_numpy_dtype(t)), width, kind
    if kind in ("str", "bytes"):
        return tf.string, (), "str"
    raise DataError(
        f"column {field.name!r} has type {field.type}, which cannot become a tensor. Cast it to "
        "a number or string before writing (e.g. df[col] = df[col].astype('int64')), or leave "
        "it out with columns=[...]"
    )


def _numpy_dtype(t):
    """The NumPy dtype of an Arrow number type, without pandas: a task need not have it (and
    pyarrow's ``DataType.to_pandas_dtype`` imports it, in some releases)."""
    import pyarrow as pa

    return pa.array([], type=t).to_numpy(zero_copy_only=False).dtype


def _to_numpy(name: str, col, kind: str, width: tuple[int, ...]):
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks)
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


def _parallel(plan, groups, reader, arrays, outputs, shuffle, seed, window):
    """Runs of pieces read whole, ``PARALLEL_READS`` at a time, in order; with ``shuffle``, runs
    in a new order every pass (every ``.repeat()`` epoch) and rows permuted within windows of
    whole runs, reproducible with ``seed``."""
    import numpy as np
    import tensorflow as tf

    def read(index, key):
        t = reader.read([plan.pieces[j] for i in index for j in groups[i]])
        rng = np.random.default_rng(int(key) & (2**63 - 1)) if shuffle else None
        return arrays(t, rng)

    n = len(groups)
    ids = tf.data.Dataset.range(n)
    if shuffle and n:
        per = max(1, round(window / max(plan.rows / n, 1)))
        ids = ids.shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(per)
        keys = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    else:
        ids = ids.batch(1)
        keys = tf.data.Dataset.from_tensors(np.int64(0)).repeat()
    dtypes = [dtype for _, dtype, _ in outputs]
    return tf.data.Dataset.zip(ids, keys).map(
        lambda index, key: tuple(tf.numpy_function(read, [index, key], dtypes, False)),
        num_parallel_calls=PARALLEL_READS,
        deterministic=True,
    )


def _streamed(chunk, reader, arrays, outputs, shuffle, seed, window):
    """Row groups streamed page by page in record batches of ``chunk`` rows, through
    ``Dataset.from_generator``: for row groups too big to hold a few of them decoded. Slower
    than :func:`_parallel` (one thread, and the generator's conversions), memory a few chunks.
    With ``shuffle``, pieces in a new order every pass and rows permuted within windows."""
    import numpy as np
    import tensorflow as tf

    passes = [0]

    def generate():
        rng = None
        if shuffle:  # a new order every pass (every .repeat() epoch), reproducible with seed
            rng = np.random.default_rng(None if seed is None else [seed, passes[0]])
        passes[0] += 1
        for b in stream(reader, chunk, rng, window):
            yield tuple(arrays(b))

    signature = tuple(tf.TensorSpec((None, *shape), dtype) for _, dtype, shape in outputs)
    return tf.data.Dataset.from_generator(generate, output_signature=signature).prefetch(1)


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

    row_bytes = sum(
        (specs[c][0].size if specs[c][0] != tf.string else 32) * int(np.prod(specs[c][1] or 1))
        for c in read_cols
    )
    chunk = max(batch_size, min(CHUNK_ROWS, CHUNK_BYTES // max(row_bytes, 1)))
    groups = group_pieces(plan, chunk)
    biggest = max((sum(piece_rows(plan, plan.pieces[i]) for i in g) for g in groups), default=0)
    reader = PieceReader(plan, read_cols)

    widths = {c: int(np.prod(specs[c][1] or 1)) for c in wanted}
    # What each read returns: the columns, or (stack=True) one float32 matrix and the label.
    outputs = (
        [("features", tf.float32, (sum(widths.values()),))]
        + ([(label, specs[label][0], specs[label][1])] if label else [])
        if stack
        else [(c, specs[c][0], specs[c][1]) for c in read_cols]
    )

    def arrays(t, rng=None):
        """A table's (or record batch's) rows as NumPy arrays, as ``outputs`` says; permuted
        with ``rng`` if given."""
        if rng is not None:
            t = t.take(rng.permutation(t.num_rows))
        cols = {c: _to_numpy(c, t.column(c), specs[c][2], specs[c][1]) for c in read_cols}
        if not stack:
            return list(cols.values())
        # Column by column into one matrix (casting as it copies): a third of the time of
        # tf.concat on [n, 1] pieces, measured at 64k rows x 16 columns.
        x = np.empty((t.num_rows, sum(widths.values())), np.float32)
        at = 0
        for c, w in widths.items():
            x[:, at : at + w] = cols[c].reshape(t.num_rows, w)
            at += w
        return [x, cols[label]] if label else [x]

    def structure(out):
        named = {}
        for (name, _, shape), t in zip(outputs, out, strict=True):
            t.set_shape((None, *shape))
            named[name] = t
        y = named.pop(label) if label else None
        x = named["features"] if stack else named
        return x if label is None else (x, y)

    window = shuffle_window or max(8 * batch_size, 65536)
    if biggest * row_bytes > STREAM_BYTES:
        ds = _streamed(chunk, reader, arrays, outputs, shuffle, seed, window)
    else:
        ds = _parallel(plan, groups, reader, arrays, outputs, shuffle, seed, window)
    ds = ds.map(lambda *out: structure(out))
    ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)  # == unbatch().batch(), one copy
    n = plan.rows // batch_size if drop_remainder else -(-plan.rows // batch_size)
    ds = ds.apply(tf.data.experimental.assert_cardinality(n))
    options = tf.data.Options()
    # Already sharded here: tf.distribute must not shard it again (it would fall back to
    # taking every N-th batch).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options).prefetch(2)
