"""A submitted job as the notebook sees it: wait, result, kill; and the one place that words
how a job ended."""

from __future__ import annotations

import threading
import time

from .core.bundle import Bundle
from .core.errors import BackendError, JobFailedError
from .core.protocol import JobSnapshot, JobState, TaskState, TaskView
from .core.spec import JobSpec
from .launcher.client import JobRecord
from .launcher.pickclient import open_client


def submit(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    if spec.backend == "local":
        from .launcher import local as backend_local

        return backend_local.submit(spec, bundle, argv)
    if spec.backend == "yarn":
        from .launcher.yarn import backend as backend_yarn

        return backend_yarn.submit(spec, bundle, argv)
    raise BackendError(
        f"the {spec.backend!r} backend is not available in this version of tony-jupyter; "
        "use --backend local (or unset HADOOP_CONF_DIR to make local the default)"
    )


def failure(snapshot: JobSnapshot) -> JobFailedError:
    """Turn a job that did not succeed into the error the user reads: state, reason, and the
    failing task's remote traceback."""
    task_id = snapshot.failed_task
    tb = None
    for t in snapshot.tasks:
        if t.id == task_id or (task_id is None and t.traceback):
            tb, task_id = t.traceback, t.id
            break
    others = tuple(
        (t.id, t.traceback or _ended(t))
        for t in snapshot.tasks
        if t.id != task_id and (t.traceback or t.state == TaskState.FAILED)
    )
    return JobFailedError(
        snapshot.job_id,
        str(snapshot.state),
        snapshot.reason,
        task=task_id,
        remote_traceback=tb,
        others=others,
    )


def _ended(task: TaskView) -> str:
    """A failed task without a Python traceback: how it ended, as its AM saw it."""
    how = f"exited with code {task.exit_code}" if task.exit_code is not None else "failed"
    return f"{task.id} {how}" + (f" ({task.diagnostics})" if task.diagnostics else "")


class TonyJob:
    """Handle on a job: returned by ``%%tony --async``; the sync path uses it too."""

    def __init__(self, record: JobRecord, namespace: dict | None = None):
        self.record = record
        self.client = open_client(record)
        self.namespace = namespace
        self.done = threading.Event()
        self._final: JobSnapshot | None = None

    @property
    def job_id(self) -> str:
        return self.record.id

    def __repr__(self) -> str:
        return f"<TonyJob {self.job_id} {self.state}>"

    @property
    def state(self) -> JobState:
        return (self._final or self.client.snapshot()).state

    def wait(self, timeout: float | None = None) -> JobSnapshot:
        deadline = None if timeout is None else time.monotonic() + timeout
        since = 0
        while self._final is None:
            if self.done.is_set():
                break
            _, since = self.client.events(since, timeout=2.0)
            snap = self.client.snapshot()
            if snap.terminal:
                self.set_final(snap)
            elif deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.job_id} still {snap.state} after {timeout} s")
            elif snap.history_pending:
                time.sleep(0.05)  # ended; the AM is keeping its history (the events answer now)
        self.done.wait()
        return self._final or self.client.snapshot()

    def set_final(self, snapshot: JobSnapshot) -> None:
        self._final = snapshot
        self.done.set()

    def result(self, timeout: float | None = None):
        """The chief's last expression; ``--pull`` names go into the notebook namespace."""
        snap = self.wait(timeout)
        try:
            if snap.state != JobState.SUCCEEDED:
                raise failure(snap)
            got = self.client.result()
        finally:
            self.client.release()
        if got is None:
            return None
        if self.namespace is not None:
            self.namespace.update(got["pulled"])
        if got.get("missing"):
            print(f"--pull: the chief never defined {', '.join(got['missing'])}")
        return got["value"]

    def kill(self, reason: str = "killed on request", wait: float = 15.0) -> JobSnapshot:
        self.client.kill(reason)
        deadline = time.monotonic() + wait
        snap = self.client.snapshot()
        while not snap.terminal and time.monotonic() < deadline:
            time.sleep(0.1)
            snap = self.client.snapshot()
        self.client.release()
        self.client.wait_am_exit(wait)
        return snap
