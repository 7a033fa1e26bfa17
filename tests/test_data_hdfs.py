"""dataset()/record_batches() over hdfs:// on the real devcluster (WebHDFS, no libhdfs); the
files are conftest's ``hdfs_dir``."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tony_jupyter import data

pytestmark = pytest.mark.yarn


@pytest.mark.parametrize("count,mode", [(2, "file"), (4, "row_group")])
def test_hdfs_shards_disjoint_and_complete(hdfs_dir, count, mode):
    _, url, _ = hdfs_dir
    ids = []
    for i in range(count):
        assert data.shard_plan(f"{url}/*.parquet", shard=(i, count)).mode == mode
        for b in data.record_batches(url, batch_size=16, shard=(i, count)):
            ids += b.column("id").to_pylist()
    assert sorted(ids) == list(range(300))


@pytest.mark.parametrize("stream_bytes", [64 << 20, 0], ids=["parallel", "streamed"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_hdfs_dataset_reads_row_groups_in_parallel(hdfs_dir, monkeypatch, shuffle, stream_bytes):
    """dataset() reads HDFS from TensorFlow's threads, every row group a read of its own, two
    at a time (handles to HDFS files are Python objects: closing one from a TensorFlow thread's
    teardown once hung here); then the same rows again, from the handles kept open."""
    import tensorflow as tf  # noqa: F401 - dataset() needs it

    from tony_jupyter.data import tfdata

    monkeypatch.setattr(tfdata, "CHUNK_ROWS", 1)
    monkeypatch.setattr(tfdata, "STREAM_BYTES", stream_bytes)  # 0: streamed, page by page
    _, url, _ = hdfs_dir
    ds = data.dataset(url, columns=["id"], batch_size=10, shuffle=shuffle, seed=1, shard=False)
    for _ in range(2):
        ids = np.concatenate([x["id"].numpy() for x in ds])
        if shuffle:
            assert sorted(ids) == list(range(300)) and (ids != np.arange(300)).any()
        else:
            assert ids.tolist() == list(range(300))


def test_hdfs_bad_inputs(hdfs_dir):
    client, url, base = hdfs_dir
    with pytest.raises(data.DataError, match="matches no file on HDFS"):
        data.resolve(f"{url}/nope-*.parquet")
    client.write(f"{base}/bad.parquet", data=b"not parquet", overwrite=True)
    with pytest.raises(data.DataError, match="bad.parquet is not a Parquet file"):
        data.shard_plan(url, shard=(0, 1))


def test_filesystem_writes_parquet_to_hdfs(hdfs_dir):
    client, url, base = hdfs_dir
    fs, path = data.filesystem(f"hdfs://{base}/written")  # no host: the conf's namenode
    assert path == f"{base}/written"
    fs.create_dir(path)
    for i in range(2):
        t = pa.table({"id": np.arange(i * 50, (i + 1) * 50)})
        pq.write_table(t, f"{path}/part-{i}.parquet", filesystem=fs, row_group_size=20)
    assert sorted(client.list(f"{base}/written")) == ["part-0.parquet", "part-1.parquet"]
    ids = [i for b in data.record_batches(f"{url}/written", shard=False) for i in b["id"].tolist()]
    assert ids == list(range(100))
