"""A warm session, the kernel's warm AM and the panel on an HA devcluster (`devcluster up
--ha`; and `--tls`: conftest.py), through the kill of the active ResourceManager and then of the
active NameNode, in one test (each failover is seconds of the partition's time): the session's
next cell runs in the same application and the same executor, reading what earlier cells left
there (a variable, and an HDFS filesystem opened on the nameservice before the kills); the panel's
REST routes (the Jupyter server extension, in-process on 127.0.0.1) list the session, show its
detail and its log through the new active RM; once the session has stopped, its history entry on
HDFS lists it from another TONY_JUPYTER_HOME (another host), through `%tony list` and the panel
alike; the warm AM started beside it outlives both kills, and the next job of its shape is
handed to it and runs in the container it held.

The figures (printed, never asserted): seconds from each kill to the new active master, to the
panel's routes answering, and to the session's next cell answering."""

from __future__ import annotations

import json
import re
import time

import pytest
from helpers.jobs import fetch_json

from tony_jupyter import commands
from tony_jupyter import session as sessions
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.joblist import all_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn import warmkeeper as warm
from tony_jupyter_devcluster import failover

pytest_plugins = ["pytest_jupyter.jupyter_server"]
pytestmark = [pytest.mark.ha, pytest.mark.slow]

SESSION = "session start --workers 1 --no-tensorboard"
JOB = "--workers 1 --no-tensorboard"  # the session's shape: its warm AM takes this job

# Cell 1 leaves state in the session's executor: a variable and a filesystem on the nameservice
# (pyarrow's HDFS client, opened now, used again after the NameNode it talked to was killed).
OPEN = """
import os
from pyarrow import fs as pafs
from tony_jupyter import data
n = 41
fs, base = data.filesystem(URL)
with fs.open_output_stream(base + "/cell1") as f:
    f.write(b"written before the failovers")
os.environ["CONTAINER_ID"]
"""
AFTER_RM = """
print("cell 2, after the RM failover", flush=True)
(n + 1, os.environ["CONTAINER_ID"])
"""
AFTER_NN = """
with fs.open_output_stream(base + "/cell3") as f:
    f.write(b"written after the NameNode's failover")
with fs.open_input_stream(base + "/cell1") as f:
    first = f.read().decode()
(n + 2, first, sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(base))))
"""
WHERE = "import os\nos.environ['CONTAINER_ID']"


@pytest.fixture
def warm_on(monkeypatch, tony_home):
    monkeypatch.setenv(warm.warm.YARN_IDLE, "600")
    yield
    warm.discard()  # as the kernel's exit does; tony_home then checks nothing is left


def _warm_app(cluster, timeout: float = 120) -> dict:
    """The warm AM started after the last submission, once it runs with its spare executor
    waiting."""
    deadline = time.monotonic() + timeout
    while True:
        w = warm.current()
        if w is not None and warm.ready(w) >= 1:
            return cluster.app(w.app_id)
        assert time.monotonic() < deadline, "no warm AM came up with its spare executor"
        time.sleep(0.5)


async def _panel(jp_fetch, app_id: str) -> tuple[dict, dict, dict, str]:
    """The panel's job list row of ``app_id``, its detail, its snapshot and worker:0's log."""
    rows = {j["job_id"]: j for j in (await fetch_json(jp_fetch, "tony", "api", "jobs"))["jobs"]}
    detail = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id, "detail")
    snap = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id)
    logs = await fetch_json(
        jp_fetch, "tony", "api", "jobs", app_id, "logs", params={"task": "worker:0"}
    )
    return rows.get(app_id, {}), detail, snap, logs["text"]


def _attempts(cluster, app_id: str) -> int:
    got = cluster.http.get(f"{cluster.rm}/ws/v1/cluster/apps/{app_id}/appattempts", timeout=10)
    return len(got.json()["appAttempts"]["appAttempt"])


async def test_a_warm_session_the_warm_am_and_the_panel_survive_an_rm_and_an_nn_failover(
    jp_fetch, shell, tony_home, cluster, ha_cluster, warm_on, tmp_path, monkeypatch
):
    base = f"/user/{cluster.user}/ha-session-{time.time_ns()}"
    shell.user_ns["URL"] = f"hdfs://devcluster{base}"
    shell.run_line_magic("tony", SESSION)
    app_id = sessions.current().job.job_id
    figures = []
    try:
        container = shell.run_cell_magic("tony", "", OPEN)
        # Submitting the session started a warm AM of its shape beside it.
        spare = _warm_app(cluster)
        assert spare["id"] != app_id
        held = {c["containerId"] for c in cluster.containers(spare["id"])}
        assert len(held) == 2  # its AM's and one spare executor's
        row, detail, snap, _ = await _panel(jp_fetch, app_id)
        assert row["state"] == snap["state"] == detail["job"]["state"] == "RUNNING"

        done = failover.failover(ha_cluster, "rm", restart=False)
        try:
            # Each of the panel's requests finds the session's AM through the new active RM,
            # which has the application as ACCEPTED until its AM re-registers.
            row, detail, snap, _ = await _panel(jp_fetch, app_id)
            routes_s = time.time() - done.killed_at
            assert row["state"] == snap["state"] == detail["job"]["state"] == "RUNNING"
            assert shell.run_cell_magic("tony", "", AFTER_RM) == (42, container)
            figures.append((done, routes_s, time.time() - done.killed_at))
            *_, log = await _panel(jp_fetch, app_id)
            assert "cell 2, after the RM failover" in log
        finally:
            failover.start_standby(ha_cluster, done.killed)

        done = failover.failover(ha_cluster, "nn", restart=False)
        try:
            value, first, names = shell.run_cell_magic("tony", "", AFTER_NN)
            figures.append((done, None, time.time() - done.killed_at))
        finally:
            failover.start_standby(ha_cluster, done.killed)
        assert (value, first, names) == (43, "written before the failovers", ["cell1", "cell3"])
        assert sessions.current().job.job_id == app_id
        # Work-preserving recovery: the session's AM re-registered with the new active RM.
        assert _attempts(cluster, app_id) == 1
    finally:
        shell.run_line_magic("tony", "session stop")
    assert cluster.wait_app_end(app_id, 60)["finalStatus"] == "SUCCEEDED"

    # From another home (another host): the session is known only through its history entry.
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "other-home"))
    try:
        listing = all_jobs()
        assert listing.where.get(app_id) == "history", (listing.where, listing.notes)
        assert not listing.notes, listing.notes
        assert re.search(rf"^{app_id}\s.*\sSUCCEEDED\s.*history$", commands.list_text(), re.M)
        row, detail, snap, log = await _panel(jp_fetch, app_id)
        assert row["state"] == snap["state"] == "SUCCEEDED" and detail["history"] is True
        assert "cell 2, after the RM failover" in log
    finally:
        monkeypatch.setenv("TONY_JUPYTER_HOME", str(tony_home))

    # The warm AM outlived both kills (its one attempt, its containers held): the next job of its
    # shape is handed to it and runs in the container it held before the failovers.
    assert warm.current() is not None and warm.current().app_id == spare["id"]
    assert shell.run_cell_magic("tony", JOB, WHERE) in held
    rec = next(r for r in list_jobs() if r.id == spare["id"])
    assert json.loads(rec.layout.yarn_info.read_text())["warm"] is True
    assert open_client(rec).snapshot().state == "SUCCEEDED"
    assert cluster.wait_app_end(spare["id"], 60)["finalStatus"] == "SUCCEEDED"
    assert _attempts(cluster, spare["id"]) == 1
    cluster.http.delete(  # what cells 1 and 3 wrote
        f"{cluster.webhdfs}/webhdfs/v1{base}",
        params={"op": "DELETE", "recursive": "true", "user.name": cluster.user},
        timeout=30,
    )
    for done, routes_s, cell_s in figures:
        routes = "" if routes_s is None else f"the panel's routes answered {routes_s:.1f} s, "
        print(
            f"\n[figures] warm session, {done.kind.upper()} failover ({done.killed} killed, "
            f"{done.active} active): {done.seconds:.1f} s to the new active, {routes}the "
            f"session's next cell answered {cell_s:.1f} s after the kill"
        )
