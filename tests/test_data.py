"""tony_jupyter.data without processes: the sharding arithmetic, which task reads what, and
dataset()/record_batches() over real Parquet files in a temp dir."""

import itertools
import json
import random
import socket

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tony_jupyter import data
from tony_jupyter.data import DataError, Piece, plan_pieces


def covered(row_groups, count):
    """Every reader's rows as (file, global row) sets, from the pieces alone."""
    out = []
    for i in range(count):
        _, pieces = plan_pieces(row_groups, i, count)
        rows = set()
        for p in pieces:
            n = row_groups[p.file][p.row_group]
            offset = sum(row_groups[p.file][: p.row_group])
            stop = n if p.stop is None else p.stop
            rows |= {(p.file, offset + r) for r in range(p.start, stop)}
        out.append(rows)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_pieces_are_disjoint_and_complete(seed):
    rnd = random.Random(seed)
    files = [
        [rnd.randint(0, 50) for _ in range(rnd.randint(1, 4))] for _ in range(rnd.randint(1, 6))
    ]
    total = sum(map(sum, files))
    count = rnd.randint(1, 8)
    if total < count:
        with pytest.raises(DataError, match=f"{count} readers but only {total} rows"):
            covered(files, count)
        return
    parts = covered(files, count)
    for a, b in itertools.combinations(parts, 2):
        assert not a & b
    assert sum(map(len, parts)) == total


def test_modes_and_balance():
    assert plan_pieces([[10], [10], [10]], 1, 3) == ("file", [Piece(1, 0)])
    assert plan_pieces([[10], [10], [10], [10]], 1, 3)[1] == [Piece(1, 0)]
    mode, pieces = plan_pieces([[5, 5, 5, 5]], 0, 2)
    assert mode == "row_group" and len(pieces) == 2
    mode, pieces = plan_pieces([[7, 3]], 2, 3)  # 10 rows, 2 groups, 3 readers: row ranges
    assert mode == "rows" and pieces == [Piece(0, 0, 7, 7), Piece(0, 1, 0, 3)][1:]
    # Row groups dealt by size: loads within one row group of each other.
    groups = [[100, 90, 80, 70, 60, 50, 40, 30, 20, 10]]
    loads = [len(r) for r in covered(groups, 3)]
    assert max(loads) - min(loads) <= 100


@pytest.mark.parametrize(
    "cluster,task,expect",
    [
        ({"worker": ["a", "b"]}, ("worker", 1), (1, 2)),
        ({"chief": ["c"], "worker": ["a", "b"]}, ("chief", 0), (0, 3)),
        ({"chief": ["c"], "worker": ["a", "b"]}, ("worker", 1), (2, 3)),
        ({"worker": ["a", "b"], "ps": ["p"]}, ("ps", 0), (0, 1)),
        ({"chief": ["c"], "worker": ["a"], "ps": ["p"]}, ("chief", 0), (0, 1)),
        ({"worker": ["a", "b"]}, ("evaluator", 0), (0, 1)),
    ],
)
def test_reader_index_from_tf_config(cluster, task, expect):
    env = {
        "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task[0], "index": task[1]}})
    }
    assert data.reader_index(env) == expect
    tony = {"CLUSTER_SPEC": json.dumps(cluster), "JOB_NAME": task[0], "TASK_INDEX": str(task[1])}
    assert data.reader_index(tony) == expect
    assert data.reader_index({}) == (0, 1)


@pytest.fixture
def parquet_dir(tmp_path):
    """3 files x 4 row groups (300, 300, 300, 100 rows): 3,000 rows, ids 0..2999."""
    for i in range(3):
        n = 1000
        t = pa.table(
            {
                "id": np.arange(i * n, (i + 1) * n),
                "x": np.random.default_rng(i).random(n).astype("float32"),
                "s": [f"r{j}" for j in range(n)],
                "emb": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.arange(n * 4, dtype="float32")), 4
                ),
            }
        )
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=300)
    (tmp_path / "_SUCCESS").write_text("")
    return tmp_path


@pytest.mark.parametrize(
    "count,mode",
    [(1, "file"), (2, "file"), (3, "file"), (4, "row_group"), (12, "row_group"), (13, "rows")],
)
def test_record_batches_shard_disjoint_complete(parquet_dir, count, mode):
    ids = []
    for i in range(count):
        assert data.shard_plan(parquet_dir, shard=(i, count)).mode == mode
        batches = list(
            data.record_batches(parquet_dir, columns=["id"], batch_size=128, shard=(i, count))
        )
        assert all(b.num_rows == 128 for b in batches[:-1])
        ids.append([v for b in batches for v in b.column("id").to_pylist()])
    flat = sorted(v for part in ids for v in part)
    assert flat == list(range(3000))
    if mode != "file":
        assert max(map(len, ids)) - min(map(len, ids)) <= 300


def test_globs_lists_and_missing(parquet_dir):
    assert len(data.resolve(str(parquet_dir / "*.parquet"))[1]) == 3
    assert (
        len(data.resolve([parquet_dir / "part-0.parquet", parquet_dir / "part-1.parquet"])[1]) == 2
    )
    with pytest.raises(DataError, match="glob '.*nope-\\*.parquet' matches no file"):
        data.resolve(str(parquet_dir / "nope-*.parquet"))
    with pytest.raises(DataError, match="path '/no/such/dir' matches no file"):
        data.resolve("/no/such/dir")


def test_not_parquet(parquet_dir):
    (parquet_dir / "notes.parquet").write_text("this is not parquet, it is text")
    with pytest.raises(DataError, match="notes.parquet is not a Parquet file .* pass only Parquet"):
        data.shard_plan(parquet_dir, shard=(0, 1))


def test_more_readers_than_rows(tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "small.parquet")
    with pytest.raises(DataError, match="3 readers but only 2 rows.*at most 2"):
        data.shard_plan(tmp_path, shard=(0, 3))


def test_webhdfs_address(monkeypatch, tmp_path):
    pytest.importorskip("fsspec")
    monkeypatch.setenv("TONY_WEBHDFS_URL", "http://nn.example:50070")
    fs = data._webhdfs("hdfs://nn.example:8020/data")
    assert "nn.example:50070" in fs.url
    monkeypatch.delenv("TONY_WEBHDFS_URL")
    (tmp_path / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.namenode.http-address</name>"
        "<value>127.0.0.1:9871</value></property></configuration>"
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert "127.0.0.1:9871" in data._webhdfs("hdfs://whatever/data").url


def test_an_ha_nameservice_is_read_from_its_configuration_and_its_active_namenode_used(
    monkeypatch, tmp_path
):
    """On the notebook host (no TONY_WEBHDFS_URL): hdfs://<nameservice>/ is served by the
    nameservice's NameNodes as hdfs-site.xml lists them, and the active one's JMX says so."""
    pytest.importorskip("fsspec")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Active(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"beans": [{"State": "active"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Active)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    active = server.server_address[1]
    with socket.socket() as s:  # a port nothing listens on: nn1, down
        s.bind(("127.0.0.1", 0))
        down = s.getsockname()[1]
    site = {
        "dfs.nameservices": "prod",
        "dfs.ha.namenodes.prod": "nn1,nn2",
        "dfs.namenode.http-address.prod.nn1": f"127.0.0.1:{down}",
        "dfs.namenode.http-address.prod.nn2": f"127.0.0.1:{active}",
    }
    props = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in site.items()
    )
    (tmp_path / "hdfs-site.xml").write_text(f"<configuration>{props}</configuration>")
    (tmp_path / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://prod</value>"
        "</property></configuration>"
    )
    monkeypatch.delenv("TONY_WEBHDFS_URL", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    try:
        both = f"http://127.0.0.1:{down};http://127.0.0.1:{active}"
        assert data._namenode_urls("hdfs://prod/data") == both
        assert data._namenode_urls("hdfs:///data") == both  # fs.defaultFS's nameservice
        assert f"127.0.0.1:{active}" in data._webhdfs("hdfs://prod/data").url
    finally:
        server.shutdown()
    # A nameservice without its NameNodes: the configuration's fix, named, not a guessed host.
    (tmp_path / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.nameservices</name><value>prod</value></property>"
        "</configuration>"
    )
    with pytest.raises(DataError, match="lists no dfs.ha.namenodes.prod"):
        data._webhdfs("hdfs://prod/data")


# --- dataset() (TensorFlow, in this process) -------------------------------------------------


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.fixture(params=["parallel", "streamed"])
def read_path(request, monkeypatch):
    """dataset()'s two ways of reading: runs of row groups read whole, two at a time, or (for
    row groups over STREAM_BYTES decoded, forced here) streamed page by page."""
    from tony_jupyter.data import tfdata

    if request.param == "streamed":
        monkeypatch.setattr(tfdata, "STREAM_BYTES", 0)
    return request.param


def test_dataset_dict_features_and_label(parquet_dir, tf, read_path):
    ds = data.dataset(parquet_dir, label="id", batch_size=256, shard=(1, 4))
    x_spec, y_spec = ds.element_spec
    assert sorted(x_spec) == ["emb", "s", "x"] and x_spec["emb"].shape.as_list() == [None, 4]
    assert x_spec["s"].dtype == tf.string and y_spec.dtype == tf.int64
    ids = np.concatenate([y.numpy() for _, y in ds])
    assert len(ids) == data.shard_plan(parquet_dir, shard=(1, 4)).rows
    assert ds.cardinality().numpy() == -(-len(ids) // 256)
    opts = ds.options().experimental_distribute.auto_shard_policy
    assert opts == tf.data.experimental.AutoShardPolicy.OFF


def test_dataset_stacked_shuffled_drop_remainder(parquet_dir, tf, read_path):
    ds = data.dataset(
        str(parquet_dir / "*.parquet"),
        columns=["x", "emb"],
        label="id",
        stack=True,
        shuffle=True,
        seed=3,
        batch_size=100,
        drop_remainder=True,
        shard=False,
    )
    assert ds.element_spec[0].shape.as_list() == [100, 5]
    first = np.concatenate([y.numpy() for _, y in ds])
    second = np.concatenate([y.numpy() for _, y in ds])
    assert sorted(first) == list(range(3000)) and (first != np.arange(3000)).any()
    assert (first != second).any()  # a new order each pass


def test_dataset_bad_columns(tmp_path, tf, read_path):
    t = pa.table(
        {
            "ok": [1.0, 2.0],
            "when": pa.array([1, 2], pa.timestamp("s")),
            "tags": pa.array([[1], [2, 3]]),
            "n": pa.array([1, None]),
        }
    )
    pq.write_table(t, tmp_path / "t.parquet")
    with pytest.raises(DataError, match="column 'when' has type timestamp.*cannot become a tensor"):
        data.dataset(tmp_path, columns=["ok", "when"])
    with pytest.raises(DataError, match="column .tags. has type list<"):
        data.dataset(tmp_path, columns=["tags"])
    with pytest.raises(DataError, match="no column 'nope'.*its columns are ok, when, tags, n"):
        data.dataset(tmp_path, columns=["nope"])
    with pytest.raises(DataError, match="batch_size must be at least 1"):
        data.dataset(tmp_path, batch_size=0)
    ds = data.dataset(tmp_path, columns=["n"])
    with pytest.raises(Exception, match="column 'n' has null values"):
        list(ds)


def test_dataset_values_match_pyarrow(tmp_path, tf, read_path):
    """Every column kind (nulls, bools, dictionaries, lists) at batch sizes that do and do not
    divide the row groups arrives with pyarrow's values."""
    n = 1000
    rng = np.random.default_rng(0)
    x = rng.random(n)
    t = pa.table(
        {
            "id": np.arange(n),
            "f32": rng.random(n).astype("float32"),
            "f64_nulls": pa.array(np.where(np.arange(n) % 7 == 0, np.nan, x), from_pandas=True),
            "i8": (np.arange(n) % 100).astype("int8"),
            "flag": np.arange(n) % 3 == 0,
            "cat": pa.array([f"c{i % 5}" for i in range(n)]).dictionary_encode(),
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 3)), 3),
        }
    )
    pq.write_table(t, tmp_path / "all.parquet", row_group_size=333)
    want = pq.read_table(tmp_path / "all.parquet")
    for batch_size in (1, 77, 128, 1000, 4096):
        ds = data.dataset(tmp_path, batch_size=batch_size, shard=False)
        got = {k: np.concatenate([b[k].numpy() for b in ds]) for k in t.column_names}
        assert len(got["id"]) == n and (got["id"] == np.arange(n)).all()
        for c in ("f32", "i8", "flag"):
            assert (got[c] == want[c].to_numpy()).all(), c
        np.testing.assert_array_equal(got["f64_nulls"], want["f64_nulls"].to_numpy())
        assert got["cat"].tolist() == [s.encode() for s in want["cat"].to_pylist()]
        np.testing.assert_array_equal(got["emb"], np.stack(want["emb"].to_pylist()))


def test_dataset_two_iterators_at_once(parquet_dir, tf, read_path):
    ds = data.dataset(parquet_dir, columns=["id"], batch_size=64, shard=False)
    a, b = iter(ds), iter(ds)
    ids_a, ids_b = [], []
    for x, y in zip(a, b, strict=True):  # interleaved: each iterator has its own pass
        ids_a += x["id"].numpy().tolist()
        ids_b += y["id"].numpy().tolist()
    assert ids_a == ids_b == list(range(3000))
    # Epochs of .repeat() are passes too.
    two = np.concatenate([x["id"].numpy() for x in ds.repeat(2)])
    assert two.tolist() == list(range(3000)) * 2


def test_filesystem_local(tmp_path):
    fs, path = data.filesystem(tmp_path / "out")
    assert path == str(tmp_path / "out")
    fs.create_dir(path)
    pq.write_table(pa.table({"a": [1, 2, 3]}), f"{path}/p.parquet", filesystem=fs)
    assert [b.num_rows for b in data.record_batches(path, shard=False)] == [3]


# --- how dataset() reads: runs of pieces, from several threads ---------------------------------


def test_group_pieces_runs_cover_every_piece_once(parquet_dir):
    from tony_jupyter.data.batches import group_pieces, piece_rows

    plan = data.shard_plan(parquet_dir, shard=False)
    assert [piece_rows(plan, p) for p in plan.pieces] == [300, 300, 300, 100] * 3
    runs = group_pieces(plan, 500)
    assert [i for run in runs for i in run] == list(range(len(plan.pieces)))  # in order, once
    sizes = [sum(piece_rows(plan, plan.pieces[i]) for i in run) for run in runs]
    assert all(s >= 500 for s in sizes[:-1]) and sizes[-1] > 0
    assert sizes == [600, 700, 600, 700, 400]
    assert group_pieces(plan, 1) == [[i] for i in range(12)]  # a big piece is never split
    assert group_pieces(plan, 10**9) == [list(range(12))]


def test_piece_reader_from_many_threads_at_once(parquet_dir):
    """One ParquetFile read from two threads at once fails inside pyarrow; the reader gives
    each thread its own, and every thread sees the same rows."""
    from concurrent.futures import ThreadPoolExecutor

    from tony_jupyter.data.batches import PieceReader

    plan = data.shard_plan(parquet_dir, shard=(12, 13))  # rows mode: a slice of a row group
    assert plan.mode == "rows" and plan.pieces[0].stop is not None
    full = data.shard_plan(parquet_dir, shard=False)
    reader = PieceReader(full, ["id", "x"])
    want = [reader.read([p]).column("id").to_pylist() for p in full.pieces]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda p: reader.read([p]).column("id").to_pylist(), full.pieces * 8))
    assert got == want * 8
    part = PieceReader(plan, ["id"]).read(plan.pieces).column("id").to_pylist()
    assert part == list(range(3000 - len(part), 3000))


@pytest.mark.parametrize("stream_bytes", [64 << 20, 0], ids=["parallel", "streamed"])
def test_dataset_parallel_reads_keep_row_order(parquet_dir, tf, monkeypatch, stream_bytes):
    """Every row group its own read, read two at a time (or, with row groups too big for
    that, streamed): the rows still come out in file order, batches cutting across reads."""
    from tony_jupyter.data import tfdata

    monkeypatch.setattr(tfdata, "CHUNK_ROWS", 1)
    monkeypatch.setattr(tfdata, "STREAM_BYTES", stream_bytes)
    ds = data.dataset(parquet_dir, columns=["id", "emb"], batch_size=77, shard=False)
    got = [(x["id"].numpy(), x["emb"].numpy()) for x in ds]
    assert all(len(i) == 77 for i, _ in got[:-1])
    ids = np.concatenate([i for i, _ in got])
    assert ids.tolist() == list(range(3000))
    emb = np.concatenate([e for _, e in got])
    np.testing.assert_array_equal(emb[:, 0], (ids % 1000) * 4)


def test_dataset_shuffle_windows_and_seed(tmp_path, tf, read_path, monkeypatch):
    """Shuffled: runs in a new order every pass, rows mixed across the runs of a window, the
    same passes again for the same seed."""
    from tony_jupyter.data import tfdata

    monkeypatch.setattr(tfdata, "CHUNK_ROWS", 1)  # every row group a run of its own
    pq.write_table(pa.table({"id": np.arange(2400)}), tmp_path / "t.parquet", row_group_size=300)

    def passes(seed, n=2):
        ds = data.dataset(
            tmp_path,
            columns=["id"],
            batch_size=50,
            shuffle=True,
            seed=seed,
            shuffle_window=600,  # two row groups
            shard=False,
        )
        return [np.concatenate([x["id"].numpy() for x in ds]) for _ in range(n)]

    first, second = passes(7)
    assert sorted(first) == sorted(second) == list(range(2400))
    assert (first != second).any()
    for start in range(0, 2400, 600):
        window = first[start : start + 600] // 300  # row groups
        assert len(set(window.tolist())) == 2  # a window is two whole row groups ...
        assert (np.diff(window) != 0).sum() > 10  # ... their rows mixed, not one after the other
    windows = [set((first[s : s + 600] // 300).tolist()) for s in range(0, 2400, 600)]
    assert windows != [{0, 1}, {2, 3}, {4, 5}, {6, 7}]  # row groups in a shuffled order
    again = passes(7)
    assert all((a == b).all() for a, b in zip(again, [first, second], strict=True))
    assert (passes(8, 1)[0] != first).any()


_NO_PANDAS = """
import sys


class NoPandas:  # as on a node whose environment has no pandas
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError("No module named 'pandas'", name=name)


sys.meta_path.insert(0, NoPandas())
from tony_jupyter import data
ids = [int(i) for b in data.dataset(sys.argv[1], columns=["x", "y"], batch_size=50)
       for i in b["x"].numpy().tolist()]
print(len(ids), "pandas" in sys.modules)
"""


def test_a_task_without_pandas_reads_a_dataset_of_numbers(tmp_path, tf):
    import subprocess
    import sys

    pq.write_table(
        pa.table({"x": np.arange(120, dtype="int16"), "y": np.ones(120, dtype="float32")}),
        tmp_path / "part-0.parquet",
    )
    got = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert got.stdout.split()[-2:] == ["120", "False"], got.stdout
