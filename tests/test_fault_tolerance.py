"""A lost worker fails the attempt; the next attempt resumes from the last checkpoint."""

import os
import signal
import threading
import time

import pytest
from helpers.cells import CHECKPOINTED
from helpers.jobs import strike_when, wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter.am.coordinator import Coordinator
from tony_jupyter.am.provider import Provider
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args


def kill_worker_when(record, signum, min_epoch=3):
    """Wait until attempt 1 has trained ``min_epoch`` epochs, then signal worker:1."""

    def kill(snap):
        (worker,) = [t for t in snap.tasks if t.id == "worker:1"]
        os.kill(worker.pid, signum)

    return strike_when(record, kill, min_epoch, timeout=120)[0]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSTOP], ids=["kill-9", "sigstop"])
def test_lost_worker_resumes_from_checkpoint(shell, tony_home, signum):
    X, y = load_digits(return_X_y=True)
    shell.user_ns.update(X=(X / 16.0).astype("float32"), y=y)
    struck = {}

    def striker():
        while not list_jobs():
            time.sleep(0.05)
        struck["at"] = kill_worker_when(list_jobs()[0], signum)

    t = threading.Thread(target=striker, daemon=True)
    t.start()
    flags = (
        "--workers 2 --max-attempts 2 --pull first_epoch,attempt "
        "--conf tony.task.heartbeat-interval-ms=500 --conf tony.task.max-missed-heartbeats=8"
    )
    epochs_run = shell.run_cell_magic("tony", flags, CHECKPOINTED)
    t.join(5)
    assert shell.user_ns["attempt"] == 2
    # Attempt 2 starts at the checkpointed epoch, not 0, and finishes the 8 epochs.
    first = shell.user_ns["first_epoch"]
    assert first >= 3 and epochs_run == 8 - first
    snap = open_client(list_jobs()[0]).snapshot()
    assert snap.state == "SUCCEEDED" and snap.attempt == 2
    (ended,) = snap.attempts
    assert ended.task == "worker:1" or "worker:0" in ended.reason
    if signum == signal.SIGSTOP:
        assert "missed 8 heartbeats" in ended.reason
        events, _ = open_client(list_jobs()[0]).events(0)
        failed = next(e for e in events if e.kind == "attempt" and e.data["state"] == "FAILED")
        # Detected within interval x max-missed + one interval (0.5 s x 8 + 0.5 s).
        assert failed.time - struck["at"] <= 4.5
    else:
        assert "killed by signal 9" in ended.reason or "exited" in ended.reason
    assert wait_no_processes(tony_home) == []


class RecordingProvider(Provider):
    """Keeps what the coordinator records, as the YARN provider keeps it on HDFS."""

    def __init__(self):
        self.records = []

    def record_event(self, event):
        self.records.append(event)

    def launch(self, task, task_id, attempt, env):
        pass

    def placement(self, task_id, attempt):
        return None

    def stop_task(self, task_id, attempt):
        pass

    def shutdown(self):
        pass


def test_logs_of_an_attempt_lost_with_its_am_are_restored_by_the_next_am(tmp_path):
    _, spec = parse_job_args("--workers 2")
    lost = RecordingProvider()
    first = Coordinator("job1", spec, tmp_path / "am1", lost, {})
    first.start()
    first.add_logs("worker:1", 1, "epoch 1\n")
    first.add_logs("worker:0", 1, "chief line\n")
    first.add_logs("worker:1", 1, "epoch 2\n")
    second = Coordinator("job1", spec, tmp_path / "am2", RecordingProvider(), {})
    second.recover(lost.records)
    second.start()
    assert second.attempt == 2
    assert second.log_path("worker:1", 1).read_text() == "epoch 1\nepoch 2\n"
    assert second.log_path("worker:0", 1).read_text() == "chief line\n"
    # Log batches are not job events: the history holds only what the first AM emitted.
    assert [e for e in second.events if e.kind == "log"] == []
    assert second.events[: len(first.events)] == first.events
