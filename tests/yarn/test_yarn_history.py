"""The history on HDFS: a job submitted with one TONY_JUPYTER_HOME is listed, opened and its
logs read from another, empty one (as from another host), after its AM is gone; the entry
holds the resource samples; retention removes old entries and nothing else."""

import getpass
import json
import time

import pytest
import requests
from helpers.jobs import FAST, fetch_json, submit

from tony_jupyter import commands
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.joblist import all_jobs, open_job
from tony_jupyter.launcher.yarn import secure
from tony_jupyter.launcher.yarn.hdfsjobs import history_root

pytest_plugins = ["pytest_jupyter.jupyter_server"]
pytestmark = pytest.mark.yarn

CELL = """
import time, tony_jupyter
for step in range(1, 11):
    tony_jupyter.report(step=step, loss=1.0 / step, total_steps=10)
    time.sleep(0.3)
print("from the history", flush=True)
"""


def hdfs(cluster, op: str, path: str, method: str = "GET", **params):
    env = cluster.env()
    return requests.request(
        method,
        f"{env['TONY_DEVCLUSTER_WEBHDFS_URL']}/webhdfs/v1{path}",
        params={"op": op, "user.name": getpass.getuser(), **params},
        timeout=30,
    )


def test_a_job_is_listed_opened_and_read_from_another_home(
    shell, tony_home, tmp_path, monkeypatch, yarn_cluster, cluster
):
    shell.run_cell_magic("tony", f"--workers 2 --name histyarn {FAST}", CELL)
    (rec,) = list_jobs()
    app_id = rec.id
    cluster.wait_app_end(app_id)  # its AM writes the history before it unregisters
    entry = f"{history_root(getpass.getuser())}/{app_id}"
    names = {
        s["pathSuffix"]
        for s in hdfs(yarn_cluster, "LISTSTATUS", entry).json()["FileStatuses"]["FileStatus"]
    }
    assert {"history.json", "metrics.json", "spec.json", "cell.py", "events.jsonl"} <= names
    assert {"status.json", "logs"} <= names and "token" not in names

    other = tmp_path / "other-home"  # another host, or a kernel with another home
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(other))
    listing = all_jobs()
    assert listing.where.get(app_id) == "history", listing.notes
    row = next(r for r in listing.rows if r["job_id"] == app_id)
    assert row["state"] == "SUCCEEDED" and row["name"] == "histyarn"
    assert app_id in commands.list_text()
    assert "SUCCEEDED" in commands.status_text(app_id)
    assert "from the history" in commands.logs_text(app_id, "worker:1")
    opened = open_job(app_id)
    metrics = json.loads((opened.dir / "metrics.json").read_text())["attempts"]["1"]
    assert set(metrics) == {"worker:0", "worker:1"}
    for samples in metrics.values():
        assert any(s.get("cpu_percent") is not None and s.get("rss_bytes") for s in samples)
        assert any("loss" in s for s in samples)
    hist = json.loads((opened.dir / "history.json").read_text())
    assert hist["cell_sha256"] and hist["spec"]["name"] == "histyarn"


def test_an_entry_is_its_users_only_and_keeps_the_variables_names_not_their_values(
    shell, tony_home, yarn_cluster, cluster
):
    """Issue 28, finding 6: a variable's value reaches the tasks; the entry (700, its files 600,
    under a root of 700) names the variable and holds no value."""
    secret = "s3cret-4b7e91"
    line = f"--workers 2 --conf tony.containers.envs=API_KEY={secret}"
    assert shell.run_cell_magic("tony", line, "import os\nos.environ['API_KEY']") == secret
    (rec,) = list_jobs()
    cluster.wait_app_end(rec.id)
    root = history_root(getpass.getuser())
    entry = f"{root}/{rec.id}"

    def mode(path: str) -> str:
        return hdfs(yarn_cluster, "GETFILESTATUS", path).json()["FileStatus"]["permission"]

    assert mode(root) == "700" and mode(entry) == "700"
    listed = hdfs(yarn_cluster, "LISTSTATUS", entry).json()["FileStatuses"]["FileStatus"]
    files = [s["pathSuffix"] for s in listed if s["type"] == "FILE"]
    assert "spec.json" in files and "env.json" not in files
    assert {s["permission"] for s in listed} == {"600", "700"}, listed
    for name in files:
        body = hdfs(yarn_cluster, "OPEN", f"{entry}/{name}").content
        assert secret.encode() not in body, name
    spec = json.loads(hdfs(yarn_cluster, "OPEN", f"{entry}/spec.json").content)
    assert spec["env"] == ["API_KEY"]


def test_retention_on_hdfs_removes_old_entries_and_nothing_else(
    shell, tony_home, monkeypatch, yarn_cluster, cluster
):
    user = getpass.getuser()
    root = history_root(user)
    old, fresh = f"{root}/application_1_0001_tonytest_old", f"{root}/application_1_0002_tonytest"
    for d in (old, fresh):
        assert hdfs(yarn_cluster, "MKDIRS", d, "PUT").status_code == 200
    year_ago_ms = int((time.time() - 365 * 86400) * 1000)
    r = hdfs(yarn_cluster, "SETTIMES", old, "PUT", modificationtime=year_ago_ms)
    assert r.status_code == 200
    try:
        shell.run_cell_magic("tony", f"--workers 1 {FAST}", "1")  # its AM applies retention
        (rec,) = list_jobs()
        cluster.wait_app_end(rec.id)
        here = {
            s["pathSuffix"]
            for s in hdfs(yarn_cluster, "LISTSTATUS", root).json()["FileStatuses"]["FileStatus"]
        }
        assert old.rsplit("/", 1)[1] not in here
        assert fresh.rsplit("/", 1)[1] in here and rec.id in here
        staging = hdfs(yarn_cluster, "LISTSTATUS", root.rsplit("/", 1)[0]).json()
        kept = {s["pathSuffix"] for s in staging["FileStatuses"]["FileStatus"]}
        assert "history" in kept
    finally:
        for d in (old, fresh):
            hdfs(yarn_cluster, "DELETE", d, "DELETE", recursive="true")


def test_a_running_job_from_another_home_is_opened_through_its_staging(
    shell, tony_home, tmp_path, monkeypatch, yarn_cluster
):
    shell.run_cell_magic("tony", f"--workers 1 --async {FAST}", "import time; time.sleep(60)")
    (rec,) = list_jobs()
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "elsewhere"))
    assert secure.connect().conf.user == getpass.getuser()
    deadline = time.monotonic() + 120
    while "RUNNING" not in commands.status_text(rec.id):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert all_jobs().where[rec.id] == "here"  # adopted by status_text: now a record here
    assert commands.kill_text(rec.id).endswith("KILLED")


SCALARS = """
import tony_jupyter
for step in range(1, 6):
    tony_jupyter.report(step=step, loss=1.0 / step, total_steps=5)
"""


async def test_tensorboard_of_a_finished_job_from_its_history(
    jp_fetch, jp_serverapp, tony_home, yarn_cluster, cluster
):
    client = submit(f"--workers 1 {FAST}", SCALARS, {})
    client.release()
    cluster.wait_app_end(client.job_id)
    assert client.snapshot().state == "SUCCEEDED"
    entry = f"{history_root(getpass.getuser())}/{client.job_id}/tensorboard"
    assert hdfs(yarn_cluster, "GETFILESTATUS", entry).status_code == 200
    scalars = await fetch_json(
        jp_fetch,
        *("tony", "proxy", client.job_id, "tensorboard", "data", "plugin", "scalars"),
        "scalars",
        params={"run": "train", "tag": "step_loss"},
    )
    assert [round(v, 3) for _, step, v in scalars] == [1.0, 0.5, 0.333, 0.25, 0.2]
    jp_serverapp.web_app.settings["tony_jupyter.jobs"].boards.close()
