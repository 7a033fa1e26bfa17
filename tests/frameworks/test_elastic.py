"""Elastic PyTorch jobs (--workers MIN:MAX) for real: PyTorch's elastic agent with a c10d
rendezvous on worker:0, DDP with gloo on the digits; a lost worker is replaced by a new attempt of
that task alone while the others' agents restart their processes from the last checkpoint."""

import os
import signal
import threading
import time

import pytest
from helpers.cells import ELASTIC_DDP, HANG_WORKER_1
from helpers.jobs import assert_refused_before_submission, wait_no_processes
from IPython.core.error import UsageError
from sklearn.datasets import load_digits

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[test]'")


@pytest.mark.parametrize(
    "line,message",
    [
        ("--workers 3:2", "--workers 3:2: MIN (3) is above MAX (2); write --workers 2:3"),
        ("--workers 0:2", "--workers 0:2: MIN and MAX must be at least 1"),
        ("--workers a:b", "--workers takes N or MIN:MAX (whole numbers, e.g. 2:4), not 'a:b'"),
        (
            "--workers 2:3 --framework tensorflow",
            "--workers 2:3: elastic jobs run under PyTorch's elastic agent (torchrun's c10d "
            "rendezvous); a TensorFlow job has a fixed set of tasks: add --framework pytorch, "
            "or use --workers 3",
        ),
        ("--workers 2:3 --framework jax", "a JAX job has a fixed set of tasks"),
        ("--workers 2:3 --framework pytorch --chief", "drop --chief"),
        ("--workers 2:3 --framework pytorch --max-attempts 2", "drop --max-attempts"),
    ],
)
def test_bad_elastic_input_is_a_usage_error_and_submits_nothing(shell, tony_home, line, message):
    assert_refused_before_submission(shell, tony_home, line, message)
    assert wait_no_processes(tony_home) == []


def test_an_elastic_session_is_refused_naming_the_fix(shell, tony_home):
    with pytest.raises(UsageError) as e:
        shell.run_line_magic("tony", "session start --framework pytorch --workers 2:3")
    assert "use a fixed --workers N for the session" in str(e.value)
    assert list_jobs() == [] and wait_no_processes(tony_home) == []


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def epochs_done(snap) -> int:
    """The epochs rank 0 reported (report() from the elastic agent's processes reaches the
    task table through their executor's heartbeats), wherever the rendezvous put rank 0."""
    return max((int((t.progress or {}).get("epoch_done", 0)) for t in snap.tasks), default=0)


def kill_worker_1_at_epoch(epoch: int, timeout: float = 240) -> float:
    """Once ``epoch`` epochs are checkpointed, SIGKILL worker:1's executor."""
    deadline = time.monotonic() + timeout
    while not list_jobs():
        time.sleep(0.05)
    client = open_client(list_jobs()[0])
    while time.monotonic() < deadline:
        snap = client.snapshot()
        if epochs_done(snap) >= epoch:
            os.kill(snap.task("worker:1").pid, signal.SIGKILL)
            return time.time()
        time.sleep(0.1)
    raise TimeoutError(f"the job never checkpointed epoch {epoch}")


@pytest.mark.slow
@pytest.mark.usefixtures("backend")
def test_an_elastic_job_replaces_a_lost_worker_and_finishes(digits, tony_home):
    struck = {}
    striker = threading.Thread(
        target=lambda: struck.setdefault("at", kill_worker_1_at_epoch(3)), daemon=True
    )
    striker.start()
    last = digits.run_cell_magic(
        "tony",
        "--framework pytorch --workers 2:3 --memory 1g --no-tensorboard "
        "--pull losses,first_epoch,world "
        "--conf tony.task.heartbeat-interval-ms=500",
        ELASTIC_DDP,
    )
    striker.join(5)
    assert "at" in struck  # worker:1 was killed mid-training
    ns = digits.user_ns
    losses = ns["losses"]
    assert last == losses[-1] and len(losses) == 12
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 * 0.7  # the loss falls
    # The last round resumed from a checkpoint, after the agents restarted their processes.
    assert ns["first_epoch"] >= 3 and ns["world"] in (2, 3)
    (rec,) = list_jobs()
    snap = open_client(rec).snapshot()
    assert snap.state == "SUCCEEDED" and snap.attempt == 1 and snap.attempts == ()
    assert epochs_done(snap) == 12
    attempts = {t.id: t.attempt for t in snap.tasks}
    # worker:1 is a new attempt of that task alone; the AM did not restart the others.
    assert attempts == {"worker:0": 1, "worker:1": 2, "worker:2": 1}
    events, _ = open_client(rec).events(0)
    notes = [e for e in events if e.kind == "task" and e.data.get("reason")]
    replaced = [e for e in notes if "replaced by attempt 2" in e.data["reason"]]
    assert [e.data["task"] for e in replaced] == ["worker:1"]
    assert wait_no_processes(tony_home) == []


# workers 1 and 2 hang before they can register (a sitecustomize.py on the tasks' PYTHONPATH)
HANG_WORKERS_1_2 = HANG_WORKER_1.replace("== 'worker:1'", "in ('worker:1', 'worker:2')")


def test_a_rendezvous_short_of_min_names_the_missing_tasks(shell, tony_home, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HANG_WORKERS_1_2)
    with pytest.raises(JobFailedError) as e:
        shell.run_cell_magic(
            "tony",
            "--backend local --framework pytorch --workers 2:3 --no-tensorboard "
            "--conf tony.task.registration-timeout-sec=2 "
            f"--conf tony.containers.envs=PYTHONPATH={tmp_path}",
            "1",
        )
    assert (
        "the elastic rendezvous needs at least 2 workers; 1 registered within 2 s, "
        "missing: worker:1, worker:2"
    ) in str(e.value)
    assert wait_no_processes(tony_home) == []
