"""``dataset()``: a task's record batches as a ``tf.data.Dataset``.

How rows reach TensorFlow cheaply: Python reads runs of whole batches (up to ``RUN_ROWS`` rows or
``RUN_BYTES``) and hands each column to TensorFlow through DLPack, sharing the buffer Arrow decoded
into instead of copying it (where Arrow's buffer has the alignment TensorFlow requires; otherwise
it is copied). TensorFlow then cuts the run into batches with dim-0 slices, which share memory
too. One Python call per run, not per batch, and no copy on the way: what keeps up with plain
pyarrow (bench/data.py). A thread per pass decodes ahead (``_ReadAhead``), so pyarrow's
decoding overlaps TensorFlow's handling of the previous run.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections import OrderedDict

from .batches import DEFAULT_BATCH_SIZE, runs
from .plan import ShardPlan, plan_columns, shard_plan
from .sources import DataError

RUN_ROWS = 65536
RUN_BYTES = 16 << 20
# TensorFlow CHECK-fails (aborts the process) on a tensor whose buffer is not aligned to
# EIGEN_MAX_ALIGN_BYTES (at most 64): only such buffers are shared, the rest copied.
ALIGN = 64
# Passes (iterators over the dataset) whose Python state is kept; an abandoned one (a
# ``take(n)``, a broken loop) is dropped once this many newer ones have started.
LIVE_PASSES = 8


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


def _shared_view(arr):
    """A writable NumPy view of ``arr``'s values that TensorFlow may take as is (through
    DLPack), or None: nulls, bit-packed bools, an immutable or misaligned buffer."""
    import numpy as np
    import pyarrow as pa

    t = arr.type
    if arr.null_count or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return None
    buf = arr.buffers()[1]
    start = arr.offset * t.bit_width // 8
    if not buf.is_mutable or (buf.address + start) % ALIGN:
        return None
    return np.frombuffer(buf, dtype=t.to_pandas_dtype(), count=len(arr), offset=start)


def _to_tensor(name: str, col, kind: str, width: tuple[int, ...]):
    """A column as a flat tensor (rows × width values), shared with Arrow where it can be, else
    a NumPy array (which ``tf.py_function`` copies)."""
    import pyarrow as pa
    import tensorflow as tf

    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if col.null_count and kind != "float":
        raise DataError(
            f"column {name!r} has null values, which a {kind} tensor cannot hold; fill them "
            "before writing (df[col].fillna(...)) or leave the column out"
        )
    if width:
        col = col.flatten()
    view = _shared_view(col)
    if view is not None:
        # NumPy's capsule, not pyarrow's: TensorFlow reads only unversioned DLPack capsules,
        # which pyarrow's __dlpack__ deprecates.
        return tf.experimental.dlpack.from_dlpack(view.__dlpack__())
    return col.to_numpy(zero_copy_only=False)


class _ReadAhead:
    """A pass's runs, decoded by a thread of its own up to ``depth`` runs ahead: pyarrow
    decodes without the GIL while TensorFlow's thread hands the previous run on, so the two
    overlap instead of taking turns. ``close()`` stops the thread of an abandoned pass."""

    def __init__(self, runs, depth: int = 2):
        self.items: queue.Queue = queue.Queue(depth)
        self.stopped = threading.Event()
        self.last: tuple | None = None
        self.thread = threading.Thread(
            target=self._read, args=(runs,), name="tony-data-read-ahead", daemon=True
        )
        self.thread.start()

    def _put(self, item) -> bool:
        while not self.stopped.is_set():
            try:
                self.items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _read(self, runs) -> None:
        try:
            for run in runs:
                if not self._put(("run", run)):
                    return
            self._put(("end", None))
        except BaseException as e:  # raised again in the reader's thread, by __next__
            self._put(("error", e))

    def __next__(self):
        # After the end or an error nothing more comes: answer again without waiting (a
        # prefetching TensorFlow thread may ask once more).
        kind, value = self.last or self.items.get()
        if kind == "run":
            return value
        self.last = (kind, value)
        if kind == "end":
            raise StopIteration
        raise value

    def close(self) -> None:
        self.stopped.set()


class _Passes:
    """Python-side state of the passes over a dataset: one run generator per TensorFlow
    iterator, so two iterators (or two ``.repeat()`` epochs) never share one."""

    def __init__(self, make, empty):
        self.make, self.empty = make, empty
        self.live: OrderedDict = OrderedDict()
        self.numbers = itertools.count()

    def open(self):
        import numpy as np

        k = next(self.numbers)
        self.live[k] = _ReadAhead(self.make(k))
        while len(self.live) > LIVE_PASSES:
            self.live.popitem(last=False)[1].close()
        return np.int64(k)

    def next(self, k):
        k = int(k)
        it = self.live.get(k)
        if it is None:
            raise DataError(
                f"this pass over the dataset was dropped after {LIVE_PASSES} newer ones began; "
                "iterate each dataset to the end, or fewer at once"
            )
        try:
            return [True, *next(it)]
        except StopIteration:
            del self.live[k]
            return [False, *self.empty]


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
    passes = _Passes(
        _pass_maker(plan, read_cols, specs, batch_size, shuffle, seed, shuffle_window),
        [tf.zeros((0,), specs[c][0]) for c in read_cols],
    )
    dtypes = [tf.bool, *(specs[c][0] for c in read_cols)]

    def element(ok, *flat):
        cols = {}
        for c, t in zip(read_cols, flat, strict=True):
            width = specs[c][1]
            cols[c] = tf.reshape(t, [-1, *width]) if width else tf.ensure_shape(t, [None])
        y = cols.pop(label) if label else None
        if stack:
            x = tf.concat([tf.reshape(tf.cast(v, tf.float32), [tf.shape(v)[0], -1])
                           for v in cols.values()], axis=1)  # fmt: skip
            x = tf.ensure_shape(x, [None, sum(int(np.prod(specs[c][1] or 1)) for c in wanted)])
        else:
            x = cols
        return x if label is None else (x, y)

    def pass_runs(k):
        step = tf.data.Dataset.from_tensors(k).repeat()
        step = step.map(lambda k: tuple(tf.py_function(passes.next, [k], dtypes)))
        return step.take_while(lambda ok, *_: ok).map(element)

    def batches(*run):
        # A run is a whole number of batches, or the pass's last few rows: [rows, ...] becomes
        # [rows / b, b, ...] (a reshape, no copy), sliced into batches along its first axis.
        run = run[0] if len(run) == 1 else run
        rows = tf.shape(tf.nest.flatten(run)[0])[0]
        b = tf.minimum(rows, batch_size)
        return tf.data.Dataset.from_tensor_slices(
            tf.nest.map_structure(lambda t: tf.reshape(t, [-1, b, *t.shape[1:]]), run)
        )

    ds = tf.data.Dataset.from_tensors(np.int64(0))
    ds = ds.map(lambda _: tf.ensure_shape(tf.py_function(passes.open, [], tf.int64), []))
    ds = ds.flat_map(pass_runs).prefetch(1).flat_map(batches)
    n = plan.rows // batch_size if drop_remainder else -(-plan.rows // batch_size)
    if drop_remainder:
        # Only a pass's last batch can be short; the shapes say so for Keras.
        ds = ds.take(n).map(lambda *e: tf.nest.map_structure(
            lambda t: tf.ensure_shape(t, [batch_size, *t.shape[1:]]), e[0] if len(e) == 1 else e
        ))  # fmt: skip
    ds = ds.apply(tf.data.experimental.assert_cardinality(n))
    options = tf.data.Options()
    # Already sharded here: tf.distribute must not shard it again (for this dataset it would
    # fall back to taking every N-th batch).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options).prefetch(2)


def _pass_maker(plan: ShardPlan, read_cols, specs, batch_size, shuffle, seed, window):
    """A function making pass ``k``'s generator of runs, each a list of column tensors."""
    import numpy as np

    row_bytes = sum(
        (specs[c][0].size if specs[c][0].name != "string" else 32) * int(np.prod(specs[c][1] or 1))
        for c in read_cols
    )
    run_rows = max(1, min(RUN_ROWS, RUN_BYTES // max(row_bytes, 1)) // batch_size) * batch_size

    def make(k):
        # A new order every pass (every .repeat() epoch), reproducible with seed.
        rng = np.random.default_rng(None if seed is None else [seed, k]) if shuffle else None
        for b in runs(plan, read_cols, batch_size, run_rows, rng, window):
            yield [_to_tensor(c, b.column(c), specs[c][2], specs[c][1]) for c in read_cols]

    return make
