"""The panel's REST routes (the Jupyter server extension, in-process on 127.0.0.1) and the
history on an HA devcluster (`devcluster up --ha`; and `--tls`: conftest.py): with a job running,
the active ResourceManager is killed; the job list, the job's detail and its logs answer through
the new active one (each request finds the job's AM through the RM) and show the job going on;
after the job, its history entry on HDFS lists it, from another TONY_JUPYTER_HOME (another host),
through `%tony list` and the panel alike.

The figures (printed, never asserted): seconds from the kill to the new active RM, and to the
first answer of the panel's routes."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from helpers.jobs import FAST, fetch_json, submit, wait_for

from tony_jupyter import commands
from tony_jupyter.devcluster import failover
from tony_jupyter.launcher.history import all_jobs

pytest_plugins = ["pytest_jupyter.jupyter_server"]
pytestmark = [pytest.mark.ha, pytest.mark.slow]

STEPS = 50
# A line stamped with the wall clock every 0.5 s, for about 25 s: long enough to go on after
# the RM's failover (about 7 s here), with a step reported for the panel's progress.
CELL = f"""
import time, tony_jupyter
for step in range(1, {STEPS + 1}):
    tony_jupyter.report(step=step, loss=1.0 / step, total_steps={STEPS})
    print(f"step {{step}} at {{time.time():.3f}}", flush=True)
    time.sleep(0.5)
"""


async def _panel(jp_fetch, app_id: str) -> tuple[dict, dict, dict, str]:
    """The job list's row of ``app_id``, its detail, its snapshot and worker:0's log."""
    rows = {j["job_id"]: j for j in (await fetch_json(jp_fetch, "tony", "api", "jobs"))["jobs"]}
    detail = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id, "detail")
    snap = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id)
    logs = await fetch_json(
        jp_fetch, "tony", "api", "jobs", app_id, "logs", params={"task": "worker:0"}
    )
    return rows.get(app_id, {}), detail, snap, logs["text"]


def _stamps(log: str) -> list[float]:
    return [float(s) for s in re.findall(r"^step \d+ at (\d+\.\d+)$", log, re.M)]


async def test_the_panels_routes_and_the_history_follow_an_rm_failover(
    jp_fetch, tony_home, cluster, ha_cluster, tmp_path, monkeypatch
):
    if ha_cluster.layout.tls:
        pytest.skip(
            "run on the HTTP shape only: what the panel adds to the RM failover is protocol-"
            "agnostic, and the HTTPS clients' failover is test_ha_jobs.py's and test_ha_warm.py's"
        )
    client = submit(f"--workers 1 --no-tensorboard --name hapanel {FAST}", CELL, {})
    app_id = client.job_id
    try:
        wait_for(lambda: _stamps(client.logs("worker:0")[0]), 240, "the job's first step")
        row, detail, snap, log = await _panel(jp_fetch, app_id)
        assert row["state"] == snap["state"] == "RUNNING" and row["name"] == "hapanel"
        assert detail["job"]["job_id"] == app_id and _stamps(log)

        done = await asyncio.to_thread(failover.failover, ha_cluster, "rm", False)
        try:
            row, detail, snap, log = await _panel(jp_fetch, app_id)
            routes_s = time.time() - done.killed_at
            assert row["state"] == snap["state"] == detail["job"]["state"] == "RUNNING"
            # The job goes on, and its log as the panel reads it shows it: a line printed after
            # the kill.
            deadline = time.monotonic() + 60
            while max(_stamps(log)) <= done.killed_at:
                assert time.monotonic() < deadline, "no line of the job's after the kill"
                await asyncio.sleep(0.5)
                *_, log = await _panel(jp_fetch, app_id)
        finally:
            await asyncio.to_thread(failover.start_standby, ha_cluster, done.killed)
        wait_for(lambda: client.snapshot().terminal, 120, "the job's end")
        assert client.snapshot().state == "SUCCEEDED"
    finally:
        client.kill()
        client.release()
        assert client.wait_am_exit(30)
    app = cluster.wait_app_end(app_id, 60)
    assert app["finalStatus"] == "SUCCEEDED"
    attempts = cluster.http.get(
        f"{cluster.rm}/ws/v1/cluster/apps/{app_id}/appattempts", timeout=10
    ).json()["appAttempts"]["appAttempt"]
    assert len(attempts) == 1, attempts  # the AM re-registered with the new active RM

    # From another home (another host): the job is known only through its history entry.
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "other-home"))
    try:
        listing = all_jobs()
        assert listing.where.get(app_id) == "history", (listing.where, listing.notes)
        assert not listing.notes, listing.notes
        listed = commands.list_text()
        assert re.search(rf"^{app_id}\s+hapanel\s+yarn\s+SUCCEEDED\s.*history$", listed, re.M)
        row, detail, snap, log = await _panel(jp_fetch, app_id)
        assert row["state"] == snap["state"] == "SUCCEEDED" and detail["history"] is True
        assert f"step {STEPS} at " in log
    finally:
        monkeypatch.setenv("TONY_JUPYTER_HOME", str(tony_home))
    print(
        f"\n[figures] panel, RM failover ({done.killed} killed, {done.active} active): "
        f"{done.seconds:.1f} s to the new active, the panel's routes (list, detail, job, logs) "
        f"answered {routes_s:.1f} s after the kill"
    )
