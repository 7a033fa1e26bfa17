"""The data notebook executes headless (nbclient) against the devcluster: with HADOOP_CONF_DIR set
its cells run on YARN, it writes its Parquet files to HDFS itself, and trains from a DataFrame
shard and from ``dataset("hdfs://.../*.parquet")``."""

import getpass
from pathlib import Path

import pytest
from hdfs import InsecureClient
from helpers.jobs import run_notebook

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "03-data.ipynb"


@pytest.fixture
def hdfs_data(yarn_cluster):
    """The notebook's HDFS data directory, removed afterwards (and before, if a run left it)."""
    user = getpass.getuser()
    client = InsecureClient(yarn_cluster.webhdfs_url, user=user)
    path = f"/user/{user}/tony-examples/digits-parquet"
    client.delete(path, recursive=True)
    yield client, path
    client.delete(path, recursive=True)


def outputs(cell) -> str:
    texts = []
    for o in cell.get("outputs", []):
        texts.append(o.get("text", ""))
        texts.append((o.get("data") or {}).get("text/plain", ""))
    return "\n".join(texts)


@pytest.mark.timeout(900)
def test_data_notebook_trains_on_yarn_from_hdfs(tony_home, tmp_path, cluster, hdfs_data):
    client, path = hdfs_data
    before = {a["id"] for a in cluster.apps()}
    # The kernel inherits this process's environment: tony_home put the devcluster's in it.
    nb = run_notebook(NOTEBOOK, tmp_path, timeout=900)
    # The notebook wrote its Parquet files to HDFS (not to the local directory)...
    write = next(c for c in nb.cells if "filesystem(data_dir)" in c.source)
    assert f"'hdfs:///user/{getpass.getuser()}/tony-examples/digits-parquet'" in outputs(write)
    assert sorted(client.list(path)) == [f"part-{i}.parquet" for i in range(4)]
    assert not (tmp_path / "digits-parquet").exists()
    # ...and both trainings ran as YARN applications that succeeded.
    for name in ("digits-shard", "digits-parquet"):
        apps = [a for a in cluster.apps(name) if a["id"] not in before]
        assert len(apps) == 1, apps
        # the cell has its result while the AM still writes the history and unregisters
        assert cluster.wait_app_end(apps[0]["id"], 120)["finalStatus"] == "SUCCEEDED", apps
    last = next(c for c in reversed(nb.cells) if c.cell_type == "code")
    assert "accuracy" in outputs(last)
