"""The job as the AM reports it: :class:`JobSnapshot` (``GET /api/v1/job``, ``status.json``),
which the notebook side reads back as the same record, its tasks' :class:`TaskView`, and the
server extension's :class:`JobSummary`. The labextension's types come from
``labextension/schema/protocol.schema.json`` (checked by tests/test_protocol.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..records import Record
from .states import DONE_TASK_STATES, SCHEMA_VERSION, TERMINAL_JOB_STATES, JobState, TaskState

MAX_GPU_INDEX = 4096
MAX_GPU_MEMORY_MB = 1 << 30  # a petabyte


@dataclass(frozen=True)
class GpuUse(Record):
    """One GPU a task may use, as ``nvidia-smi --query-gpu`` reported it (TonY's AM too)."""

    index: int
    utilization: float | None = None  # percent
    memory_used_mb: float | None = None
    memory_total_mb: float | None = None

    def bound(self) -> None:
        super().bound()
        if not 0 <= self.index < MAX_GPU_INDEX:
            raise ValueError(f"'index' must be from 0 to {MAX_GPU_INDEX - 1}")
        if self.utilization is not None and not 0 <= self.utilization <= 100:
            raise ValueError("'utilization' must be a percent, from 0 to 100")
        for name in ("memory_used_mb", "memory_total_mb"):
            if not 0 <= (getattr(self, name) or 0) <= MAX_GPU_MEMORY_MB:
                raise ValueError(f"{name!r} must be from 0 to {MAX_GPU_MEMORY_MB} MB")


@dataclass(frozen=True)
class TaskView(Record):
    """One task of a job as the AM reports it (the AM's task table holds these records,
    which only its Coordinator changes: am/tasks.py)."""

    id: str  # "worker:0"
    type: str
    index: int
    tracked: bool
    state: TaskState = TaskState.NEW
    host: str | None = None
    port: int | None = None
    pid: int | None = None
    container: str | None = None  # YARN: the task's container id
    exit_code: int | None = None
    launched_at: float | None = None
    registered_at: float | None = None
    finished_at: float | None = None
    last_heartbeat: float | None = None
    rss_bytes: int | None = None  # the task process's resident memory, from its heartbeats
    cpu_percent: float | None = None  # its CPU use (and its children's), 100 = one core
    gpus: tuple[GpuUse, ...] = ()  # its GPUs' use, when nvidia-smi is there
    progress: dict[str, Any] = field(default_factory=dict)
    traceback: str | None = None
    diagnostics: str = ""
    # The task's own attempt: the job's, except for a lost worker of an elastic job replaced
    # on its own (am/elastic.py), whose replacement is the next attempt of that task alone.
    attempt: int = 1


@dataclass(frozen=True)
class FailedAttempt(Record):
    """Why an attempt ended (the job's ``attempts`` list)."""

    attempt: int
    reason: str
    task: str | None = None


@dataclass(frozen=True)
class TaskStacks(Record):
    """One task's stacks as its sidecar dumped them (core/protocol/stacks.py): every thread's
    Python stack in faulthandler's text, or why there are none (``error``)."""

    task: str
    text: str = ""
    error: str | None = None
    seconds: float = 0.0  # the sidecar's time: signal, dump, read
    host: str | None = None


@dataclass(frozen=True)
class Stall(Record):
    """A running job none of whose tasks reported a new step for longer than its threshold
    while all of them heartbeat (am/stalls.py): since when, which tasks are furthest behind,
    their stacks once gathered."""

    since: float  # the last new step any task reported
    marked: float  # when the AM marked the job stalled
    threshold_s: float  # the job's own: factor x its median step interval, floor..ceiling
    behind: tuple[str, ...] = ()  # the tasks at the lowest step
    steps: dict[str, str] = field(default_factory=dict)  # each live task's last step, in words
    action: str = "warn"  # tony.stall.action: warn, kill or restart
    stacks: tuple[TaskStacks, ...] = ()  # every live task's, gathered as the stall is marked

    def text(self, now: float, ended: bool = False) -> str:
        """One line: since when, for how long against its limit, the tasks furthest behind
        and each task's last step (what the widget, ``status`` and the job page say)."""
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        parts = [
            f"stalled since {since}: no task reported a new step for "
            f"{fmt_duration(now - self.since)} (limit {fmt_duration(self.threshold_s)})"
        ]
        if self.behind:
            parts.append(f"furthest behind: {', '.join(self.behind)}")
        steps: dict[str, list[str]] = {}
        for task, step in self.steps.items():
            steps.setdefault(step, []).append(task)
        if steps:
            parts.append("; ".join(f"{', '.join(ts)} at {step}" for step, ts in steps.items()))
        if self.action != "warn" and not ended:
            parts.append(f"tony.stall.action={self.action}: acting once the stacks are in")
        return " · ".join(parts)


@dataclass(frozen=True)
class Amount(Record):
    """An amount of YARN resources: memory (MB), vcores and GPUs (yarn.io/gpu)."""

    memory_mb: int = 0
    vcores: int = 0
    gpus: int = 0


@dataclass(frozen=True)
class QueueWait(Record):
    """Why a YARN job, or some of its containers, waits: its queue's figures as the
    ResourceManager reports them (launcher/yarn/waiting.py builds it on the notebook side)."""

    queue: str
    since: float  # when the wait began (the application's submission, or first seen)
    waiting_for: tuple[str, ...] = ()  # "AM" while the application is ACCEPTED, else task ids
    asked: Amount = field(default_factory=Amount)  # what those containers ask, together
    partition: str = ""  # the node label they wait in ("" = the default partition)
    used: Amount = field(default_factory=Amount)  # the queue's, in that partition
    maximum: Amount = field(default_factory=Amount)  # the most the queue may have there
    available: Amount = field(default_factory=Amount)  # maximum less used
    user_used: Amount = field(default_factory=Amount)  # the job's user's, in this queue
    user_limit: Amount | None = None  # the most that user may have in this queue now
    am_used: Amount = field(default_factory=Amount)  # the queue's AMs'
    am_limit: Amount = field(default_factory=Amount)  # the most the queue's AMs may have
    apps_ahead: int = 0  # the queue's applications accepted or running, submitted before
    apps_pending: int = 0  # the queue's applications whose AM is not yet placed
    diagnostics: str = ""  # the RM's own text for the application


@dataclass(frozen=True)
class JobSnapshot(Record):
    """The whole job at one moment: what ``GET /api/v1/job`` answers and ``status.json`` keeps."""

    job_id: str
    name: str = ""
    backend: str = "local"
    state: JobState = JobState.NEW
    reason: str = ""
    failed_task: str | None = None
    attempt: int = 0
    max_attempts: int = 1
    attempts: tuple[FailedAttempt, ...] = ()
    started: float | None = None
    finished: float | None = None
    now: float = 0.0
    endpoints: dict[str, str] = field(default_factory=dict)
    chief: str | None = None
    tasks: tuple[TaskView, ...] = ()
    schema_version: int = SCHEMA_VERSION
    # The job has ended but its AM is still writing its history entry (am/historyrecord.py): it is
    # reported ended only once that entry is complete where the cluster keeps it.
    history_pending: bool = False
    stall: Stall | None = None  # the job is stalled (am/stalls.py)
    # YARN: the tasks of this attempt whose containers the RM has not allocated yet (the AM's)
    unallocated: tuple[str, ...] = ()
    waiting: QueueWait | None = None  # YARN: the job or some of its containers wait for room

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_JOB_STATES and not self.history_pending

    @property
    def settled(self) -> bool:
        """The job has ended, its history is kept, and the AM has seen every task's end."""
        done = all(t.state in DONE_TASK_STATES for t in self.tasks)
        return self.terminal and self.state != JobState.LOST and done

    def task(self, task_id: str | None) -> TaskView | None:
        return next((t for t in self.tasks if t.id == task_id), None)

    @property
    def chief_task(self) -> TaskView | None:
        return self.task(self.chief)

    @classmethod
    def lost(
        cls,
        job_id: str,
        spec: Mapping[str, Any],
        reason: str,
        state: JobState = JobState.LOST,
        started: float | None = None,
        finished: float | None = None,
    ) -> JobSnapshot:
        """The job as the notebook side can tell it when its AM is gone without a record."""
        return cls(
            job_id=job_id,
            name=spec.get("name", ""),
            backend=spec.get("backend", "local"),
            state=state,
            reason=reason,
            max_attempts=spec.get("max_attempts", 1),
            started=started,
            finished=finished,
            now=time.time(),
        )


@dataclass(frozen=True)
class TaskSummary(Record):
    id: str
    state: TaskState


@dataclass(frozen=True)
class JobSummary(Record):
    """One row of the server extension's job list (``GET /tony/api/jobs``): the side panel."""

    job_id: str
    name: str = ""
    state: JobState = JobState.UNKNOWN
    reason: str = ""
    backend: str = "local"
    attempt: int | None = None
    max_attempts: int | None = None
    started: float | None = None
    finished: float | None = None
    tasks: tuple[TaskSummary, ...] = ()
    endpoints: tuple[str, ...] = ()  # the names of the endpoints the job registered
    progress: dict[str, Any] = field(default_factory=dict)  # the chief's
    stalled_since: float | None = None  # the job is stalled: its last new step (Stall.since)
    waiting: str = ""  # YARN: what the job waits for, in words (waits.py); "" when it does not

    @classmethod
    def of(cls, snap: JobSnapshot) -> JobSummary:
        chief = snap.chief_task
        return cls(
            job_id=snap.job_id,
            name=snap.name,
            state=snap.state,
            reason=snap.reason,
            backend=snap.backend,
            attempt=snap.attempt,
            max_attempts=snap.max_attempts,
            started=snap.started,
            finished=snap.finished,
            tasks=tuple(TaskSummary(t.id, t.state) for t in snap.tasks),
            endpoints=tuple(sorted(snap.endpoints)),
            progress=dict(chief.progress) if chief else {},
            stalled_since=snap.stall.since if snap.stall else None,
        )


def fmt_duration(seconds: float | None) -> str:
    """A duration in a few characters: ``4.2 s``, ``3m 07s``, ``2h 05m``."""
    if seconds is None:
        return ""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m"


def progress_time(progress: Mapping[str, Any]) -> float:
    """When a task's progress report was made (runtime.report stamps ``time``): the newest one
    wins, as the heartbeat sidecar's last beat may arrive after the task's own final one."""
    return float(progress.get("time") or 0)
