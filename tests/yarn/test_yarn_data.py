"""--shard and tony_jupyter.data on YARN: the Parquet parts go through the HDFS staging
directory, each container localizes only its own part, and executors read hdfs:// datasets."""

import numpy as np
import pandas as pd
import pytest
from helpers.data import REPORT, assert_partition, reports
from helpers.jobs import FAST

pytestmark = pytest.mark.yarn

CELL = """
import glob, os
from tony_jupyter import data
seen = {
    "df": df["id"].tolist(),
    "arr": (arr[:, 0] // 2).tolist(),
    "types": [type(v).__name__ for v in (df, arr)],
    "index": df.index.tolist(),
    # what this container localized: its own parts only
    "parts": sorted(glob.glob(os.path.join(os.environ["TONY_BUNDLE_DIR"], "shards", "*", "*"))),
    "webhdfs": os.environ.get("TONY_WEBHDFS_URL"),
    "hdfs_ids": [i for b in data.record_batches(url, columns=["id"])
                 for i in b.column("id").to_pylist()],
}
"""


def test_shards_disjoint_and_complete_across_two_yarn_workers(
    shell,
    tony_home,
    out,
    hdfs_dir,
):
    _, url, _ = hdfs_dir
    n = 10_007
    shell.user_ns.update(
        out=str(out),
        url=url,
        df=pd.DataFrame({"id": np.arange(n), "x": np.random.default_rng(0).random(n)}),
        arr=np.arange(n * 2).reshape(n, 2),
    )
    shell.run_cell_magic("tony", f"--workers 2 --shard df,arr {FAST}", CELL + REPORT)
    got = reports(out)
    assert sorted(got) == ["worker:0", "worker:1"]
    for name in ("df", "arr"):
        assert_partition([got[f"worker:{i}"][name] for i in range(2)], n)
    assert {tuple(r["types"]) for r in got.values()} == {("DataFrame", "ndarray")}
    assert all(r["index"] == r["df"] for r in got.values())
    for i in range(2):
        names = [p.split("/shards/")[1] for p in got[f"worker:{i}"]["parts"]]
        assert names == [f"arr/part-{i:05d}.parquet", f"df/part-{i:05d}.parquet"]
    # hdfs:// datasets work in the containers (TONY_WEBHDFS_URL set), sharded by file.
    assert all(r["webhdfs"] for r in got.values())
    assert_partition([got[f"worker:{i}"]["hdfs_ids"] for i in range(2)], 300, slack=100)
