"""A job YARN cannot place: refused before submission when its total ask can never fit (see
test_yarn_backend's bad inputs); told before submitting when the queue has no room now, its
view saying what it waits for with the RM's figures; FAILED with the reason when its containers
are not allocated in time because other applications hold the queue."""

import time
import uuid

import pytest

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.core.jobdir import SPEC
from tony_jupyter.launcher.yarn.rm import as_list
from tony_jupyter.launcher.yarn.waiting import amount_of
from tony_jupyter.server_ext.jobs import summary
from tony_jupyter.widgets import render
from tony_jupyter_devcluster.config import NM_VCORES

pytestmark = pytest.mark.yarn
RUN = uuid.uuid4().hex[:6]


def test_a_job_the_queue_cannot_place_now_says_why_then_fails_unallocated(
    shell, tony_home, cluster, capfd
):
    hog = shell.run_cell_magic(
        "tony",
        # AM (1 vcore) + one worker holding all but two of the default partition's vcores.
        f"--workers 1 --vcores {NM_VCORES - 2} --async --name hog-{RUN}",
        "import time\ntime.sleep(600)",
    )
    try:
        deadline = time.monotonic() + 120
        while hog.client.snapshot().state != "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        _waits_with_the_rm_s_figures(shell, cluster, capfd)
        # The hog holds all but one of the default partition's vcores; this job's AM takes the
        # last one and its worker never gets a container.
        started = time.monotonic()
        with pytest.raises(JobFailedError) as e:
            shell.run_cell_magic(
                "tony",
                f"--workers 1 --name starved-{RUN} --conf tony.task.registration-timeout-sec=10",
                "1",
            )
        assert e.value.state == "FAILED"
        assert "YARN allocated no container for worker:0 within 10 s" in e.value.reason
        assert "queue 'default' has no room" in e.value.reason
        assert time.monotonic() - started < 90  # ended, not hanging
    finally:
        hog.kill()


def _waits_with_the_rm_s_figures(shell, cluster, capfd):
    """With the hog running: a second job is told it cannot be placed now and submitted; while
    its worker waits, its snapshot (what the widget and the panel show) carries the queue's
    figures, the same as the RM's REST answer."""
    capfd.readouterr()
    job = shell.run_cell_magic("tony", f"--workers 1 --async --name waits-{RUN}", "1")
    try:
        err = capfd.readouterr().err
        assert "tony-jupyter: queue 'default' cannot place this job now" in err
        assert "submitted anyway: it waits in the queue" in err
        deadline = time.monotonic() + 60
        while (snap := job.client.snapshot()).waiting is None:
            assert time.monotonic() < deadline, snap
            time.sleep(0.5)
        w = snap.waiting
        assert (w.queue, w.partition, w.waiting_for) == ("default", "", ("worker:0",))
        worker = next(
            t for t in job.client.record.read_json(SPEC)["tasks"] if t["type"] == "worker"
        )
        assert (w.asked.memory_mb, w.asked.vcores) == (worker["memory_mb"], 1)
        q = _rm_queue(cluster, "default")
        usage = as_list(q["resources"]["resourceUsagesByPartition"])[0]
        caps = as_list(q["capacities"]["queueCapacitiesByPartition"])[0]
        assert w.used == amount_of(usage["used"])
        assert w.maximum == amount_of(caps["effectiveMaxResource"])
        assert w.available.vcores == 0  # the hog and this job's AM hold every vcore
        user = next(u for u in as_list(q["users"]["user"]) if u["username"] == cluster.user)
        assert w.user_limit == amount_of(user["userResourceLimit"])
        assert w.user_used == amount_of(user["resourcesUsed"])
        ahead = [
            a
            for a in cluster.apps()
            if a["state"] in ("ACCEPTED", "RUNNING") and a["queue"].rsplit(".", 1)[-1] == "default"
            and a["id"] < job.job_id
        ]  # fmt: skip
        assert w.apps_ahead == len(ahead) >= 1  # the hog
        text = render.report_text(snap)
        row = summary(snap)["waiting"]  # the panel's row
        assert f"for queue 'default': worker:0 ask {w.asked.memory_mb} MB, 1 vcores" in row
        assert (
            f"for queue 'default': worker:0 ask {w.asked.memory_mb} MB, 1 vcores; the queue uses "
            f"{w.used.memory_mb} MB, {w.used.vcores} vcores of {w.maximum.memory_mb} MB, "
            f"{w.maximum.vcores} vcores"
        ) in text
    finally:
        job.kill()


def _rm_queue(cluster, name: str) -> dict:
    got = cluster.http.get(f"{cluster.rm}/ws/v1/cluster/scheduler", timeout=10).json()
    root = got["scheduler"]["schedulerInfo"]
    return next(q for q in as_list(root["queues"]["queue"]) if q["queueName"] == name)
