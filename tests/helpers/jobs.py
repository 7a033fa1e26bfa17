"""Driving and watching jobs from a test: submit without a shell, wait, strike at an epoch, and
check that nothing was left (processes of a job staged under a TONY_JUPYTER_HOME)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from helpers.leftovers import processes_under, wait_nothing_left
from tony_jupyter import job
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.launcher.client import JobClient, list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args

# Heartbeats every 0.2 s (a job's state and final progress reach the test sooner), and 10 s of a
# task's silence before it is lost: a loaded machine (two test processes, TensorFlow importing)
# stalls a task's heartbeat thread past the default 8 beats (1.6 s at this pace).
FAST = "--conf tony.task.heartbeat-interval-ms=200 --conf tony.task.max-missed-heartbeats=50"


def private_home(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """Generator for a ``tony_home`` fixture: a private TONY_JUPYTER_HOME, no HADOOP_CONF_DIR;
    after the test, asserts no AM or executor is left."""
    home = tmp_path / "tony-home"
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(home))
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    yield home
    # An AM exits within moments of being released; anything still there after that is a leak
    # (killed, so that one leak fails one test only).
    try:
        wait_nothing_left(10, 0.1, processes=lambda: processes_under(home))
    finally:
        for p in processes_under(home):
            p.kill()


def wait_no_processes(home: Path, timeout: float = 15.0) -> list:
    deadline = time.monotonic() + timeout
    while (left := processes_under(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def submit(line: str, source: str, names: dict) -> JobClient:
    _, spec = parse_job_args(line)
    return open_client(job.submit(spec, make_bundle(source, names)))  # the backend tony_home sets


@contextmanager
def running(record, home: Path, timeout: float = 30.0) -> Iterator[JobClient]:
    """A submitted job's client once the job is RUNNING; killed at the end, its AM gone and
    nothing left under ``home``."""
    client = open_client(record)
    deadline = time.monotonic() + timeout
    while client.snapshot().state != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.snapshot().state == "RUNNING"
    yield client
    client.kill()
    client.release()
    assert client.wait_am_exit()
    assert wait_no_processes(home) == []


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def strike_when(record, strike, min_epoch=3, timeout=300, ready=None):
    """Once attempt 1 has trained ``min_epoch`` epochs (and ``ready()``, when given, is true),
    ``strike(snapshot)``; (time, epoch)."""
    client = open_client(record)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = client.snapshot()
        worker0, worker1 = snap.task("worker:0"), snap.task("worker:1")
        done = ((worker0.progress if worker0 else None) or {}).get("epoch_done", 0)
        armed = snap.attempt == 1 and done >= min_epoch and worker1 is not None and worker1.pid
        if armed and (ready is None or ready()):
            strike(snap)
            return time.time(), done
        time.sleep(0.05)
    raise TimeoutError("attempt 1 never reached the epoch to strike at")


def tensorboard_processes(job_id: str) -> list[psutil.Process]:
    """TensorBoard processes of this job: its logdir (in the command line) is under the job's
    dir (local) or its application's container dir (YARN), both named by the job id."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if p.info["status"] != psutil.STATUS_ZOMBIE and "executor.tensorboard" in cmd:
                if job_id in cmd:
                    found.append(p)
        except (psutil.Error, TypeError):
            continue
    return found


async def fetch_json(jp_fetch, *parts, **kw):
    r = await jp_fetch(*parts, **kw)
    return json.loads(r.body)


def run_notebook(path: Path, cwd: Path, timeout: int = 600):
    """Execute a notebook headless (nbclient) in ``cwd``; returns it, asserting no cell failed.

    "python3" is the kernel of the interpreter running the tests (the project's venv); the
    kernel inherits this process's environment.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, kernel_name="python3", timeout=timeout, resources={"metadata": {"path": str(cwd)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    return nb


def assert_refused_before_submission(shell, tony_home: Path, line: str, message: str) -> None:
    """``%%tony --backend local LINE`` is a usage error naming ``message``, and nothing was
    created: no job record, no process."""
    import pytest
    from IPython.core.error import UsageError

    from tony_jupyter.launcher.client import list_jobs

    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", f"--backend local {line}", "1")
    assert message in str(e.value)
    assert list_jobs() == [] and processes_under(tony_home) == []


class Interrupter:
    """Ctrl-C for a cell run in this process, sent once ``ready()`` holds.

    A look that raises (an AM not answering yet under load) is tried again, not the end of
    the watch; past ``timeout`` the SIGINT goes anyway, so a cell never hangs the test, and
    ``missed`` says the moment never came: assert ``not missed`` after the cell."""

    def __init__(self, ready, timeout: float = 60.0):
        self.missed = False
        self.last_error: Exception | None = None
        self._ready, self._timeout = ready, timeout
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            try:
                if self._ready():
                    break
            except Exception as e:  # noqa: BLE001 - look again
                self.last_error = e
            time.sleep(0.05)
        else:
            self.missed = True
        os.kill(os.getpid(), signal.SIGINT)


def tasks_of_the_only_job() -> tuple:
    jobs = list_jobs()
    return open_client(jobs[0]).snapshot().tasks if jobs else ()
