"""Fault tolerance on YARN, with the cell of tests/test_fault_tolerance.py: a worker killed
(kill -9 of its process, or its container killed through YARN), a hung worker (SIGSTOP: missed
heartbeats), a lost AM (kill -9; YARN's next application attempt recovers the job from the event
log in staging) and a crashed node (its NodeManager and every process in its containers killed,
then the node restarted). Each time attempt 2 starts at the epoch checkpoint_dir() (mirrored
through HDFS) had saved, the job succeeds, and nothing of it is left: no process, no live
container, no application, no staging directory."""

import getpass
import os
import signal
import threading
import time

import psutil
import pytest
import requests
from helpers.cells import CHECKPOINTED
from helpers.jobs import strike_when
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter_devcluster import process as daemons
from tony_jupyter_devcluster.config import NODEMANAGERS
from tony_jupyter_devcluster.testing import started_by_fixture

pytestmark = [pytest.mark.yarn, pytest.mark.slow]
# What the heartbeat sidecar takes for a task that cannot beat (SIGSTOP, a debugger).
STOPPED = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)

# When attempt 2's first epoch begins, and the epoch each attempt reached, for the figures.
TIMED_CELL = CHECKPOINTED.replace("global first_epoch\n", "global first_epoch, resumed_at\n")
TIMED_CELL = TIMED_CELL.replace(
    "            first_epoch = epoch\n",
    "            first_epoch = epoch\n            resumed_at = time.time()\n",
)
TIMED_CELL = TIMED_CELL.replace(
    'attempt = int(os.environ["TONY_ATTEMPT"])\n',
    'attempt = int(os.environ["TONY_ATTEMPT"])\n'
    "print(f\"attempt {attempt} of {os.environ['TONY_TASK_ID']} started\", flush=True)\n",
)
assert TIMED_CELL.count("started") == 1
# TensorFlow's library loading holds the GIL for seconds on a loaded machine: 10 s of silence.
INTERVAL_S, MAX_MISSED = 1.0, 10
# A stopped worker must be caught before TensorFlow's own coordination service (10 s without
# its heartbeats) aborts worker:0's collectives, which would end the attempt as worker:0's
# failure instead. Heartbeats come from a sidecar that the GIL does not hold up: 5 s is safe.
STOP_MAX_MISSED = 5
FLAGS = (
    "--workers 2 --max-attempts 2 --pull first_epoch,attempt,resumed_at "
    f"--conf tony.task.heartbeat-interval-ms={INTERVAL_S * 1000:.0f} "
    f"--conf tony.task.max-missed-heartbeats={MAX_MISSED}"
)


def kill_worker_process(snap, cluster, dc):
    (worker,) = [t for t in snap.tasks if t.id == "worker:1"]
    os.kill(worker.pid, signal.SIGKILL)  # the devcluster's NMs run on this host


def kill_worker_container(snap, cluster, dc):
    """Through YARN: the RM's signal API, FORCEFUL_SHUTDOWN (SIGKILL) of worker:1's container."""
    (worker,) = [t for t in snap.tasks if t.id == "worker:1"]
    r = requests.post(
        f"{cluster.rm}/ws/v1/cluster/containers/{worker.container}/signal/FORCEFUL_SHUTDOWN",
        params={"user.name": getpass.getuser()},
        timeout=10,
    )
    assert r.status_code == 200, r.text


def kill_am(snap, cluster, dc):
    """kill -9 of the AM's process, found by its container's command line (by pid)."""
    attempts = requests.get(
        f"{cluster.rm}/ws/v1/cluster/apps/{snap.job_id}/appattempts", timeout=10
    ).json()["appAttempts"]["appAttempt"]
    container = attempts[-1]["containerId"]
    (am,) = [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [])[1:3] == ["-m", "tony_jupyter.am"]
        and container in " ".join(p.info["cmdline"])
    ]  # the Python process, not its container's bash wrapper
    am.send_signal(signal.SIGKILL)


def stop_worker_process(snap, cluster, dc):
    """SIGSTOP of worker:1's process, the one running the cell: it hangs. Its heartbeat sidecar
    (a forked child, see executor/heartbeat.py) is not stopped: it must see its task stopped and
    go silent, so the stop of the task itself is what the AM detects."""
    (worker,) = [t for t in snap.tasks if t.id == "worker:1"]
    task = psutil.Process(worker.pid)
    sidecars = task.children()
    assert sidecars, "worker:1 has no heartbeat sidecar"
    task.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while task.status() not in STOPPED:  # the kernel marks it stopped a moment later
        assert time.monotonic() < deadline, "worker:1 never stopped"
        time.sleep(0.01)
    assert all(p.status() not in STOPPED for p in sidecars)  # still running, only silent


def node_of(pid: int, dc) -> str:
    """The NodeManager whose process tree (its containers) holds ``pid``."""
    for nm in NODEMANAGERS:
        daemon = daemons.live_process(dc.layout.pid_file(nm))
        if daemon and pid in {p.pid for p in daemon.children(recursive=True)}:
            return nm
    raise AssertionError(f"pid {pid} is in no NodeManager's containers")


def crash_worker_node(snap, cluster, dc):
    """Worker:1's node crashes: its NodeManager's JVM and every process in its containers get
    SIGKILL at once (DevCluster.kill_node); the test then starts the node again.

    The node is nm1, the only node of the default partition (nm2 is the exclusive ``gpu``
    partition), so it also runs the AM and worker:0: the spec cannot place the AM elsewhere.
    The job survives through YARN's next application attempt (``tony.am.retry-count=1``): the
    restarted NM reports no containers (NM recovery is off), the RM ends the old ones as lost
    (without waiting for the NM liveness expiry, the restart is a re-registration), starts AM
    attempt 2, and that AM recovers the job from the event log and starts attempt 2 from the
    checkpoint."""
    (worker,) = [t for t in snap.tasks if t.id == "worker:1"]
    nm = node_of(worker.pid, dc)
    assert nm == "nm1"
    killed = dc.kill_node(nm)
    assert worker.pid in killed


def container_processes(dc, app_id: str) -> list[psutil.Process]:
    """Live processes in the app's containers: under a NodeManager, working in its dirs."""
    found = []
    for nm in NODEMANAGERS:
        daemon = daemons.live_process(dc.layout.pid_file(nm))
        for p in daemon.children(recursive=True) if daemon else []:
            try:
                if app_id in p.cwd() or app_id in " ".join(p.cmdline()):
                    found.append(p)
            except psutil.Error:
                pass
    return found


@pytest.mark.parametrize(
    "strike,extra",
    [
        (kill_worker_process, ""),
        (kill_worker_container, ""),
        (stop_worker_process, f"--conf tony.task.max-missed-heartbeats={STOP_MAX_MISSED}"),
        (kill_am, "--conf tony.am.retry-count=1"),
        (crash_worker_node, "--conf tony.am.retry-count=1"),
    ],
    ids=["kill-9-worker", "yarn-kills-container", "sigstop-worker", "kill-9-am", "node-crash"],
)
def test_fault_on_yarn_resumes_from_checkpoint(
    shell, tony_home, cluster, yarn_cluster, strike, extra
):
    if strike is crash_worker_node and not started_by_fixture(yarn_cluster):
        pytest.skip(f"the devcluster in {yarn_cluster.dir} was already running; not crashing it")
    X, y = load_digits(return_X_y=True)
    shell.user_ns.update(X=(X / 16.0).astype("float32"), y=y)
    struck = {}

    def striker():
        while not list_jobs():
            time.sleep(0.05)
        record = list_jobs()[0]
        # Not before a whole checkpoint (its TensorFlow index) is on HDFS: under load the
        # mirror's first upload can still be in flight at epoch 4, and attempt 2 then rightly
        # starts from scratch, which is not what this test is about.
        mirrored = f"/user/{cluster.user}/.tony-jupyter/{record.id}/checkpoints"
        try:
            struck["at"], struck["epoch"] = strike_when(
                record,
                lambda snap: strike(snap, cluster, yarn_cluster),
                min_epoch=4,
                ready=lambda: cluster.has_file(mirrored, "checkpoint"),
            )
        except Exception as e:  # noqa: BLE001 - failed below, with the reason
            struck["error"] = repr(e)
            return
        if strike is crash_worker_node:
            yarn_cluster.start_node("nm1")  # the node comes back
            struck["node_back"] = time.time()

    t = threading.Thread(target=striker, daemon=True)
    t.start()
    try:
        epochs_run = shell.run_cell_magic("tony", f"{FLAGS} {extra}", TIMED_CELL)
    finally:
        t.join(200)
        if strike is crash_worker_node and not yarn_cluster.is_running():
            yarn_cluster.start_node("nm1")  # never leave the session's cluster a node short
    assert "at" in struck, f"the fault was never injected: {struck.get('error')}"
    ns = shell.user_ns
    assert ns["attempt"] == 2
    # Attempt 2 starts at the checkpointed epoch (restored from HDFS), not 0, and finishes.
    # Struck after epoch 4, with epochs ~0.6 s apart and the mirror syncing every 0.5 s: HDFS
    # may be one save behind (the upload in flight when killed), two or three when the machine
    # is loaded (seen under CI: ckpt-2, and in a rehearsal ckpt-1 after a node crash). What
    # matters: attempt 2 starts from a checkpoint it restored from HDFS, not from scratch.
    assert ns["first_epoch"] >= 1 and epochs_run == 8 - ns["first_epoch"]
    (rec,) = list_jobs()
    client = open_client(rec)
    snap = client.snapshot()
    assert snap.state == "SUCCEEDED" and snap.attempt == 2
    (ended,) = snap.attempts
    events, _ = client.events(0)
    failed = next(e for e in events if e.kind == "attempt" and e.data["state"] == "FAILED")
    if strike in (kill_am, crash_worker_node):
        assert "the AM was lost" in ended.reason
        # Attempt 1's history came through the lost AM's event log, and so did its logs.
        assert any(
            e.kind == "attempt" and e.data["attempt"] == 1 and e.data["state"] == "STARTED"
            for e in events
        )
        for task in ("worker:0", "worker:1"):
            text, _ = client.logs(task, attempt=1)
            assert f"attempt 1 of {task} started" in text
    elif strike is stop_worker_process:
        assert ended.task == "worker:1"
        assert f"missed {STOP_MAX_MISSED} heartbeats" in ended.reason
        # Detected within interval x max-missed + one interval.
        assert failed.time - struck["at"] <= INTERVAL_S * (STOP_MAX_MISSED + 1)
    else:
        assert ended.task == "worker:1" and "exited with code" in ended.reason
    text, _ = client.logs("worker:1", attempt=2)
    assert "attempt 2 of worker:1 started" in text
    app = cluster.wait_app_end(rec.id)  # the AM unregisters as it exits, just after
    assert app["finalStatus"] == "SUCCEEDED"
    if strike in (kill_am, crash_worker_node):
        attempts = requests.get(f"{cluster.rm}/ws/v1/cluster/apps/{rec.id}/appattempts", timeout=10)
        assert len(attempts.json()["appAttempts"]["appAttempt"]) == 2  # a new AM attempt
    deadline = time.monotonic() + 30
    while left := container_processes(yarn_cluster, rec.id):
        assert time.monotonic() < deadline, f"left in {rec.id}'s containers: {left}"
        time.sleep(0.2)
    if "node_back" in struck:
        print(
            f"\n[figures] {strike.__name__}: node back {struck['node_back'] - struck['at']:.1f} s"
        )
    print(
        f"\n[figures] {strike.__name__}: detected {failed.time - struck['at']:.1f} s, "
        f"training resumed {ns['resumed_at'] - struck['at']:.1f} s after the fault, "
        f"struck when epoch {struck['epoch']} was reported done, resumed at epoch "
        f"{ns['first_epoch']}"
    )
