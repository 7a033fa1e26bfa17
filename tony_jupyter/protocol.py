"""What crosses between the notebook side, the AM and the executors: one typed definition.

States are string enums (in JSON, their value); records are frozen dataclasses with one JSON
form (``to_json``/``from_json``) and ``SCHEMA_VERSION``, like ``JobSpec``. The AM serves
:class:`JobSnapshot` (``GET /api/v1/job``), which the notebook side reads back as the same record;
the labextension's types come from ``labextension/schema/protocol.schema.json`` (checked by
tests/test_protocol.py). :class:`ExecutorEnv` defines the ``TONY_*`` variables.
"""

from __future__ import annotations

import hashlib
import time
import typing
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar

from .records import Record

SCHEMA_VERSION = 1
# A job's id (local tony_20250101_120000_abcdef, YARN application ids): one path segment.
JOB_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"


class JobState(str, Enum):
    NEW = "NEW"
    STARTING = "STARTING"  # submitted, or between attempts
    RUNNING = "RUNNING"  # every task registered, the cluster spec handed out
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    KILLED = "KILLED"
    LOST = "LOST"  # the notebook side's verdict: the AM is gone and left no final status
    UNKNOWN = "UNKNOWN"  # the server extension could not read the job

    def __str__(self) -> str:
        return self.value

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_JOB_STATES


class TaskState(str, Enum):
    NEW = "NEW"
    LAUNCHED = "LAUNCHED"
    REGISTERED = "REGISTERED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    KILLED = "KILLED"
    STOPPING = "STOPPING"  # asked to stop; its exit is awaited
    STOPPED = "STOPPED"  # an untracked task (a parameter server) stopped at the job's end

    def __str__(self) -> str:
        return self.value

    @property
    def done(self) -> bool:
        return self in DONE_TASK_STATES


class CellState(str, Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"

    def __str__(self) -> str:
        return self.value

    @property
    def done(self) -> bool:
        return self in DONE_CELL_STATES


TERMINAL_JOB_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.KILLED, JobState.LOST}
)
DONE_TASK_STATES = frozenset(
    {TaskState.SUCCEEDED, TaskState.FAILED, TaskState.KILLED, TaskState.STOPPED}
)
DONE_CELL_STATES = frozenset({CellState.SUCCEEDED, CellState.FAILED, CellState.INTERRUPTED})


class EventKind(str, Enum):
    """The ``kind`` of an event in the AM's event log (``GET /api/v1/events``)."""

    JOB = "job"  # the job's state changed
    TASK = "task"  # a task's state changed
    ATTEMPT = "attempt"  # an attempt ended
    ENDPOINT = "endpoint"  # a task registered an endpoint (TensorBoard)
    CELL = "cell"  # a session cell changed state
    LOG = "log"  # a task's log batch, kept in the YARN AM's recovery log only

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Event(Record):
    """One entry of the AM's event log (``GET /api/v1/events``, ``events.jsonl``). Its JSON form
    is flat, as clients have always read it: ``{"seq", "time", "kind", **data}``."""

    seq: int
    time: float
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "time": self.time, "kind": str(self.kind), **self.data}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        rest = {k: v for k, v in data.items() if k not in ("seq", "time", "kind")}
        return cls(int(data["seq"]), float(data["time"]), EventKind(data["kind"]), rest)


@dataclass(frozen=True)
class GpuUse(Record):
    """One GPU a task may use, as ``nvidia-smi --query-gpu`` reported it (TonY's AM too)."""

    index: int
    utilization: float | None = None  # percent
    memory_used_mb: float | None = None
    memory_total_mb: float | None = None


@dataclass(frozen=True)
class TaskView(Record):
    """One task of a job as the AM reports it."""

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
    # The job has ended but its AM is still writing its history entry (am/history.py): it is
    # reported ended only once that entry is complete where the cluster keeps it.
    history_pending: bool = False

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
        )


@dataclass(frozen=True)
class CellOutcome(Record):
    """What an executor reports for a cell it ran (``POST /api/v1/executor/result``)."""

    status: str  # "ok" | "error" | "interrupted"
    traceback: str | None = None
    value: str | None = None  # base64 cloudpickle {'value', 'pulled', 'missing'}: chief only
    arrow: dict[str, str] | None = None  # pulled tables as base64 Arrow IPC: chief only

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        # Only what is there: the notebook side takes a "value" key to mean a value was sent.
        return {k: v for k, v in super().to_json().items() if v is not None}


def token_verifier(token: str) -> str:
    """What an AM is given instead of the job's token (jobdir.TOKEN_VERIFIER)."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class ExecutorEnv(Record):
    """The environment the AM starts every executor with: the one definition of ``TONY_*``."""

    PREFIX: ClassVar[str] = "TONY_"
    am_url: str
    token: str = ""  # a one-time registration secret, traded for the task's token (register)
    job_id: str = ""
    chief: str = ""
    heartbeat_ms: int = 1000
    max_missed: int = 8
    checkpoint_dir: str = ""
    tensorboard_dir: str = ""
    tensorboard: bool = True
    session: bool = False
    framework: str = "tensorflow"  # with these two: the env of executor/frameworks.py
    procs_per_task: int = 1
    min_workers: int = 0  # PyTorch: an elastic job (--workers MIN:MAX) when above 0
    max_workers: int = 0
    max_attempts: int = 1
    secure: bool = False  # Kerberos: TensorBoard lets the RM's proxy in for the job's owner only
    # Set per task by the provider:
    task_id: str = ""
    attempt: int = 0
    bundle_dir: str = "."
    container_id: str | None = None
    executor_host: str | None = None
    staging_dir: str | None = None
    webhdfs_url: str | None = None
    checkpoint_remote: str | None = None
    python: str | None = None  # YARN: the AM's, the interpreter its executors run
    credentials_file: str | None = None  # secure YARN: the job's tokens (tokens.tokens_env)
    credentials_version: str | None = None
    hdfs_token: str | None = None

    @staticmethod
    def var(name: str) -> str:
        """The variable a field travels in: ``task_id`` -> ``TONY_TASK_ID``."""
        return ExecutorEnv.PREFIX + name.upper()

    def to_env(self) -> dict[str, str]:
        env = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                env[self.var(f.name)] = str(int(value)) if isinstance(value, bool) else str(value)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ExecutorEnv:
        hints = typing.get_type_hints(cls)
        kw: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(cls.var(f.name))
            if raw is None:
                continue
            hint = hints[f.name]
            if hint is bool:
                kw[f.name] = raw == "1"
            elif hint is int:
                kw[f.name] = int(raw)
            else:
                kw[f.name] = raw
        return cls(**kw)


# TensorBoard's guard (executor/tensorboard_guard.py): its secrets, handed to its process in
# these variables by whoever starts it (the chief's executor; the Jupyter server for a
# finished job's TensorBoard).
_VARS = {
    "key": "TONY_TB_GUARD_KEY",
    "path_key": "TONY_TB_GUARD_PATH_KEY",
    "owner": "TONY_TB_GUARD_OWNER",
    "secure": "TONY_TB_GUARD_SECURE",
}


@dataclass(frozen=True)
class GuardConfig:
    key: str  # the bearer credential
    path_key: str  # the path segment the RM's proxy comes in under
    owner: str  # the job's user: the proxy-user a secure cluster's proxy must name
    secure: bool = False  # Kerberos: the RM's proxy authenticates its users

    def to_env(self) -> dict[str, str]:
        """How the chief's executor hands these to the TensorBoard process."""
        values = {**self.__dict__, "secure": "1" if self.secure else "0"}
        return {var: str(values[name]) for name, var in _VARS.items()}

    @classmethod
    def from_env(cls, env: MutableMapping[str, str]) -> GuardConfig | None:
        """Read and remove them from ``env`` (``os.environ``); None if the key is missing."""
        got = {name: env.pop(var, "") for name, var in _VARS.items()}
        if not got["key"] or not got["path_key"]:
            return None
        return cls(got["key"], got["path_key"], got["owner"], got["secure"] == "1")


def progress_time(progress: Mapping[str, Any]) -> float:
    """When a task's progress report was made (runtime.report stamps ``time``): the newest one
    wins, as the heartbeat sidecar's last beat may arrive after the task's own final one."""
    return float(progress.get("time") or 0)
