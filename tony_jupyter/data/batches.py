"""A task's pieces as pyarrow data: streamed in record batches of exactly ``batch_size`` rows,
one row group at a time (:func:`stream`, :func:`record_batches`), or read whole, a run of
pieces at a time, from several threads (:func:`group_pieces`, :class:`PieceReader`: what
``dataset()`` does)."""

from __future__ import annotations

from contextlib import contextmanager

from .plan import Piece, ShardPlan, plan_columns, shard_plan

DEFAULT_BATCH_SIZE = 1024


def _rebatch(batches, size: int):
    """Record batches of exactly ``size`` rows (the last may be short), slicing without copies
    where a batch already fits."""
    import pyarrow as pa

    buf: list = []
    n = 0
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

    buf: list = []
    n = 0
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


def _pieces_batches(reader: PieceReader, batch_size: int, rng):
    plan = reader.plan
    order = list(plan.pieces)
    if rng is not None:
        order = [order[i] for i in rng.permutation(len(order))]
    for p in order:
        with reader.handle(p.file) as pf:
            # One row group per read: a reader given many row groups buffers ahead across
            # them, and memory then grows with the file (measured: bench/data.py).
            it = pf.iter_batches(
                batch_size=batch_size, row_groups=[p.row_group], columns=reader.columns
            )
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


def stream(reader: PieceReader, batch_size: int, rng=None, window: int | None = None):
    """The reader's plan's rows (its columns) in record batches of exactly ``batch_size`` rows
    (the last may be short), one row group at a time, page by page; with ``rng``, pieces in a
    random order and rows permuted within windows of ``window`` rows. File handles come from
    the reader's pool, so several streams may run at once."""
    batches = _pieces_batches(reader, batch_size, rng)
    if rng is not None:
        batches = _shuffled(batches, window or max(8 * batch_size, 65536), rng)
    return _rebatch(batches, batch_size)


def piece_rows(plan: ShardPlan, p: Piece) -> int:
    if p.stop is not None:
        return p.stop - p.start
    return plan.opened[p.file].metadata.row_group(p.row_group).num_rows


def group_pieces(plan: ShardPlan, rows: int) -> list[list[int]]:
    """The plan's pieces (by index) in runs of consecutive pieces holding at least ``rows``
    rows, the last run possibly fewer; a piece of ``rows`` or more is a run of its own (a row
    group is never split: reading part of one decodes it from its start)."""
    groups: list[list[int]] = []
    run: list[int] = []
    n = 0
    for i, p in enumerate(plan.pieces):
        run.append(i)
        n += piece_rows(plan, p)
        if n >= rows:
            groups.append(run)
            run, n = [], 0
    if run:
        groups.append(run)
    return groups


class PieceReader:
    """Whole pieces read as one pyarrow Table, from any thread. A ``ParquetFile`` must not be
    read from two threads at once, so each read takes one out of a pool of open handles (per
    file, reusing the footers the plan already read) and puts it back after. Not per-thread
    handles: TensorFlow's threads get a fresh Python thread state for every call, and a
    thread-local handle closed as that state is torn down deadlocks on HDFS (its file is
    Python code, through fsspec)."""

    def __init__(self, plan: ShardPlan, columns: list[str]):
        import threading

        self.plan, self.columns = plan, columns
        self.lock = threading.Lock()
        # The pool starts with the handles the plan opened to read the footers.
        self.idle: dict[int, list] = {f: [pf] for f, pf in plan.opened.items()}

    @contextmanager
    def handle(self, f: int):
        """A handle on file ``f`` that no other thread uses until the block ends."""
        import pyarrow.parquet as pq

        with self.lock:
            pf = self.idle[f].pop() if self.idle.get(f) else None
        if pf is None:
            source = self.plan.fs.open_input_file(self.plan.files[f])
            pf = pq.ParquetFile(source, metadata=self.plan.opened[f].metadata)
        try:
            yield pf
        finally:
            with self.lock:
                self.idle.setdefault(f, []).append(pf)

    def read(self, pieces: list[Piece]):
        import pyarrow as pa

        tables = []
        for p in pieces:
            with self.handle(p.file) as pf:
                t = pf.read_row_group(p.row_group, columns=self.columns)
            tables.append(t if p.stop is None else t.slice(p.start, p.stop - p.start))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def record_batches(
    paths,
    columns: list[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    shard: tuple[int, int] | bool = True,
):
    """This task's rows as pyarrow RecordBatches of ``batch_size`` rows (the last may be
    short), streamed with ``ParquetFile.iter_batches``: the rows :func:`dataset` reads,
    without TensorFlow."""
    plan = shard_plan(paths, shard)
    _, read_cols, _ = plan_columns(plan, columns, None)
    return stream(PieceReader(plan, read_cols), int(batch_size))


def column_type(field) -> tuple[str | None, tuple[int, ...], object]:
    """What a Parquet column holds, for both readers (arrays.py, tfdata.py): ``(kind, trailing
    shape, value type)``, kind ``"float"``, ``"num"`` (integers, booleans), ``"str"``,
    ``"bytes"``, or None for anything else; dictionaries read as their values."""
    import pyarrow as pa

    t = field.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    width: tuple[int, ...] = ()
    if pa.types.is_fixed_size_list(t):
        width, t = (t.list_size,), t.value_type
    if pa.types.is_floating(t):
        return "float", width, t
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "num", width, t
    if not width and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return "str", (), t
    if not width and (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return "bytes", (), t
    return None, width, t
