"""A task's pieces streamed as pyarrow record batches, one row group at a time: in batches of
exactly ``batch_size`` rows (:func:`stream`, :func:`record_batches`)."""

from __future__ import annotations

from .plan import ShardPlan, plan_columns, shard_plan

DEFAULT_BATCH_SIZE = 1024


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


def stream(plan: ShardPlan, columns, batch_size: int, rng=None, window: int | None = None):
    """This reader's rows in record batches of exactly ``batch_size`` rows (the last may be
    short); with ``rng``, pieces in a random order and rows permuted within windows of
    ``window`` rows."""
    batches = _pieces_batches(plan, columns, batch_size, rng)
    if rng is not None:
        batches = _shuffled(batches, window or max(8 * batch_size, 65536), rng)
    return _rebatch(batches, batch_size)


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
    return stream(plan, read_cols, int(batch_size))
