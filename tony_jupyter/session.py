"""Interactive distributed sessions: one warm job whose executors run cell after cell, each
task keeping its namespace between cells (as ipyparallel's engines do for ``%%px``)."""

from __future__ import annotations

import atexit
import dataclasses
import threading
import time

from .core.bundle import bound_names, make_bundle
from .core.errors import BackendError, JobFailedError, SpecError, TonyError
from .core.protocol import CellOutcome, CellState, CellView, JobSnapshot, JobState
from .core.spec import JobSpec
from .core.srcdir import SrcDir
from .job import TonyJob, failure, submit
from .launcher.client import decode_result

INTERRUPT_GRACE_S = 10.0
# cell state -> the job state the widget shows; the others have the same name
CELL_STATE = {CellState.PENDING: JobState.STARTING, CellState.INTERRUPTED: JobState.KILLED}


class SessionError(TonyError, RuntimeError):
    """The session cannot run cells (it ended, or broke); the message names the fix."""


class Session:
    def __init__(self, spec: JobSpec, line: str, detach: bool = False, src: SrcDir | None = None):
        self.spec, self.line, self.detach = spec, line, detach
        self.src = src  # shipped once, at the start: cells import from it
        self.job: TonyJob | None = None
        self.cells_run = 0
        # Names earlier cells bound live on the tasks: they are not shipped from the notebook.
        self.remote_names: set[str] = set()

    # --- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 300) -> None:
        bundle = dataclasses.replace(make_bundle("", {}), src=self.src)
        self.job = TonyJob(submit(self.spec, bundle))
        deadline = time.monotonic() + timeout
        try:
            while (snap := self.job.client.snapshot()).state != JobState.RUNNING:
                if snap.terminal:
                    raise failure(snap)
                if time.monotonic() > deadline:
                    raise SessionError(f"session {self.job.job_id} did not start in {timeout:g} s")
                time.sleep(0.1)
        except BaseException:  # Ctrl-C or a failed start: leave nothing running
            self.job.kill("the session did not start")
            raise
        if not self.detach:
            atexit.register(self.stop)  # the kernel's shutdown ends the session

    def stop(self, reason: str = "session stopped") -> JobSnapshot | None:
        if self.job is None:
            return None
        atexit.unregister(self.stop)
        job, self.job = self.job, None
        if not job.client.snapshot().terminal:
            job.client.stop_session(reason)
        deadline = time.monotonic() + 15
        while not job.client.snapshot().terminal and time.monotonic() < deadline:
            time.sleep(0.1)
        job.client.release()
        job.client.wait_am_exit()
        return job.client.snapshot()

    def restart(self) -> None:
        self.stop("restarted")
        self.cells_run = 0
        self.remote_names = set()
        self.start()

    def matches(self, spec: JobSpec) -> bool:
        """A cell's flags fit this session when they ask for the same tasks and resources."""
        return spec.tasks == self.spec.tasks

    def describe(self) -> str:
        if self.job is None:
            return "the session was stopped; %tony session start --workers N"
        snap = self.job.client.snapshot()
        tasks = ", ".join(
            f"{t.id} {t.state}" + (f" {t.rss_bytes / 2**20:.0f} MiB" if t.rss_bytes else "")
            for t in snap.tasks
        )
        text = (
            f"session {snap.job_id}: {snap.state}  cells run: {self.cells_run}  "
            f"idle timeout {self.spec.idle_timeout_s:g} s\n  tasks: {tasks}"
        )
        if snap.reason and snap.state != JobState.RUNNING:
            text += f"\n  reason: {snap.reason}"
        return text

    # --- cells ------------------------------------------------------------------------------

    def _require_running(self) -> TonyJob:
        if self.job is None:
            raise SessionError("no session is running; %tony session start --workers N")
        snap = self.job.client.snapshot()
        if snap.state == JobState.RUNNING:
            return self.job
        if snap.state == JobState.SUCCEEDED:
            raise SessionError(f"the session has ended: {snap.reason}")
        raise SessionError(
            f"the session is broken ({snap.state}: {snap.reason}); "
            "%tony session restart brings it back with the same resources"
        )

    def run(self, source: str, namespace: dict, pull: tuple[str, ...] = (), view=None):
        if self.job is None:
            raise SessionError("no session is running; %tony session start --workers N")
        job = self.job
        bundle = make_bundle(source, namespace, exclude=tuple(self.remote_names))
        # The AM refuses a cell unless the session runs: only then is the job asked why
        # (one round trip less for every cell).
        try:
            cell = job.client.submit_cell(
                source, bundle.names, list(pull), filename=f"<tony-cell-{self.cells_run + 1}>"
            )
        except BackendError:
            cell = None
        if cell is None:
            self._require_running()
            raise SessionError("the session's AM is gone; %tony session restart")
        self.remote_names |= bound_names(source)
        self.cells_run += 1
        follower = CellFollower(job, cell.id, view)
        try:
            done = follower.wait()
        except KeyboardInterrupt:
            done = self._interrupt(job, follower)
        follower.finish(done)
        if done.state != CellState.SUCCEEDED:
            raise _cell_failure(job.job_id, done)
        chief = done.results.get(self.spec.chief_id)
        got = decode_result(chief.to_json() if chief is not None else None)
        if got is None:
            return None
        namespace.update(got["pulled"])
        return got["value"]

    def _interrupt(self, job: TonyJob, follower: CellFollower) -> CellView:
        job.client.interrupt_cell(follower.cell_id)
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        while time.monotonic() < deadline:
            done = follower.poll(timeout=0.5)
            if done.done:
                return done
        follower.finish(follower.poll())
        print(
            f"[tony] a task did not stop within {INTERRUPT_GRACE_S:g} s of the interrupt: "
            "restarting the session (its state is lost)"
        )
        self.restart()
        raise KeyboardInterrupt


def _cell_failure(job_id: str, cell: CellView) -> JobFailedError:
    for task, r in sorted(cell.results.items()):
        if r.status in ("error", "interrupted"):
            state = CellState.INTERRUPTED if r.status == "interrupted" else CellState.FAILED
            return JobFailedError(
                job_id,
                state.value,
                f"cell {cell.id} {state.value.lower()} on {task}",
                task=task,
                remote_traceback=r.traceback,
            )
    ended = str(cell.state)
    return JobFailedError(job_id, ended, f"cell {cell.id} {ended.lower()}")


class CellFollower:
    """Feeds a JobView with one cell: the session's tasks, and each task's log since the
    cell started."""

    def __init__(self, job: TonyJob, cell_id: int, view):
        self.job, self.cell_id, self.view = job, cell_id, view
        self.offsets: dict[str, int] = {}
        self.last = CellView(cell_id)
        self._fed: CellView | None = None  # the cell whose logs the view has

    def poll(self, timeout: float = 0.0) -> CellView:
        feed = self.offsets if self.view is not None else None
        cell = self.job.client.cell(self.cell_id, timeout, feed=feed)
        if cell is None:  # the AM is gone: the session died under the cell
            snap = self.job.client.snapshot()
            cell = dataclasses.replace(
                self.last,
                state=CellState.FAILED,
                results={"session": CellOutcome("error", snap.reason)},
                logs=None,
            )
        self.last = cell
        if self.view is not None:
            self._feed(cell)
        return cell

    def _feed(self, cell: CellView) -> JobSnapshot:
        if cell.job is not None:  # the AM sent the snapshot and the logs with the cell
            snap = cell.job
            # Once: finish() feeds the last cell again, for its snapshot only.
            for task, got in (cell.logs or {}).items() if cell is not self._fed else ():
                self.offsets[task] = got.offset
                if got.text:
                    self.view.append_log(task, got.text)
            self._fed = cell
            self.view.update(self._as_job(snap, cell))
            return snap
        snap = self.job.client.snapshot()
        for task, start in cell.log_start.items():
            offset = self.offsets.get(task, start)
            text, self.offsets[task] = self.job.client.logs(task, offset)
            end = cell.log_end.get(task)
            if end is not None and self.offsets[task] > end:  # the next cell's output
                text = text[: len(text) - (self.offsets[task] - end)]
            if text:
                self.view.append_log(task, text)
        self.view.update(self._as_job(snap, cell))
        return snap

    def _as_job(self, snap: JobSnapshot, cell: CellView) -> JobSnapshot:
        failed = [t for t, r in cell.results.items() if r.status != "ok"]
        return dataclasses.replace(
            snap,
            state=CELL_STATE.get(cell.state) or JobState(str(cell.state)),
            name=f"{snap.name} · cell {self.cell_id}",
            started=cell.submitted,
            finished=cell.finished,
            reason=f"failed on {', '.join(failed)}" if failed else "",
            failed_task=failed[0] if failed else None,
        )

    def wait(self) -> CellView:
        while not (cell := self.poll(timeout=0.5)).done:
            pass
        return cell

    def finish(self, cell: CellView) -> None:
        if self.view is not None:
            self.view.finish(self._as_job(self._feed(cell), cell))


_current: dict[str, Session | None] = {"session": None}
_lock = threading.Lock()


def current() -> Session | None:
    return _current["session"]


def set_current(session: Session | None) -> None:
    with _lock:
        _current["session"] = session


def session_spec(spec: JobSpec, idle_timeout: float | None) -> JobSpec:
    if spec.max_attempts != 1:
        raise SpecError(
            "--max-attempts does not apply to a session: a lost task breaks it, "
            "and %tony session restart brings it back"
        )
    if spec.procs_per_task > 1:
        raise SpecError(
            "--procs-per-task does not apply to a session yet: its cells run in one process "
            "per task; start the session without it (or run the job as a %%tony cell)"
        )
    if spec.elastic:
        raise SpecError(
            f"--workers {spec.min_workers}:{spec.task('worker').instances}: a session's tasks "
            "run cell after cell in one process each, not under PyTorch's elastic agent; use "
            "a fixed --workers N for the session (or run the elastic job as a %%tony cell)"
        )
    changes: dict = {"session": True, "tensorboard": spec.tensorboard}
    if idle_timeout is not None:
        if idle_timeout <= 0:
            raise SpecError("--idle-timeout must be a positive number of seconds")
        changes["idle_timeout_s"] = idle_timeout
    return dataclasses.replace(spec, **changes)
