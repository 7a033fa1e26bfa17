"""What an executor and its AM say to each other (``/api/v1/executor/*``): register, the
cluster spec, heartbeats and their answers (a command, the session cell it is for, newer
credentials), log batches and the task's outcome. Every call names its task and attempt."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..records import MAX_WHOLE, Record, Sparse
from .views import GpuUse

# In a YARN job's HDFS checkpoints (its staging dir's ``checkpoints/``): the newest attempt that
# owns them, as that many bytes. The AM writes it as it launches an attempt; each attempt's chief
# claims it and reads it before each round that writes (executor/checkpoints.py).
CHECKPOINT_FENCE = ".tony-attempt"


@dataclass(frozen=True, kw_only=True)
class TaskCall(Record):
    """The part of every executor call's body that says who calls: a task's token acts for
    that task only (am/http.py ``own_task``), and a call of an attempt that is over is 410."""

    task: str  # "worker:0"
    attempt: int

    def bound(self) -> None:
        super().bound()
        if not 0 < len(self.task) <= MAX_NAME:
            raise ValueError(f"'task' must be a task id of 1 to {MAX_NAME} characters")
        if self.attempt < 0:
            raise ValueError("'attempt' must be 0 or more")


@dataclass(frozen=True, kw_only=True)
class RegisterRequest(TaskCall):
    """``POST executor/register``: the launch's one-time secret for the task's own token.
    ``host`` and ``container`` are claims the AM does not use (its provider knows them)."""

    port: int
    pid: int
    host: str | None = None
    container: str | None = None

    def bound(self) -> None:
        super().bound()
        if self.pid < 0:
            raise ValueError("'pid' must be 0 or more")
        for name in ("host", "container"):
            if len(getattr(self, name) or "") > MAX_NAME:
                raise ValueError(f"{name!r} must be at most {MAX_NAME} characters")


@dataclass(frozen=True)
class RegisterAnswer(Record):
    token: str  # the task's own, for all its later calls
    ok: bool = True


@dataclass(frozen=True)
class ClusterSpecAnswer(Record):
    """``GET executor/cluster-spec``: None until every task registered (a long-poll)."""

    cluster_spec: dict[str, list[str]] | None = None  # task type -> ["host:port", ...]


MAX_NAME = 255  # a task id, a host or container name a task sends
# A progress report (runtime.report): the user's keys and values, within bounds the executor
# keeps to (runtime.py clean_progress) and the AM checks (Beat.bound).
ProgressValue = int | float | str | bool | None
MAX_PROGRESS_KEYS = 256
MAX_PROGRESS_KEY = 128  # characters
MAX_PROGRESS_TEXT = 1024  # characters of a string value
MAX_GPUS = 64
MAX_CPU_PERCENT = 100.0 * 65536  # 100 = one core


@dataclass(frozen=True)
class Resources(Record):
    """What a task uses, as its heartbeat sidecar samples it (executor/resources.py)."""

    cpu_percent: float | None = None  # the task's and its children's; 100 = one core
    rss_bytes: int | None = None
    gpus: tuple[GpuUse, ...] = ()  # none without nvidia-smi

    def bound(self) -> None:
        super().bound()
        if self.cpu_percent is not None and not 0 <= self.cpu_percent <= MAX_CPU_PERCENT:
            raise ValueError(f"'cpu_percent' must be from 0 to {MAX_CPU_PERCENT:.0f}")
        if self.rss_bytes is not None and self.rss_bytes < 0:
            raise ValueError("'rss_bytes' must be 0 or more")
        if len(self.gpus) > MAX_GPUS:
            raise ValueError(f"'gpus' must list at most {MAX_GPUS} GPUs")


@dataclass(frozen=True)
class Beat(Sparse):
    """One heartbeat: what the HTTP route's body and a heartbeat stream's line carry
    (am/beats.py), each field optional."""

    progress: dict[str, ProgressValue] | None = None  # the task's runtime.report
    rss: int | None = None  # bytes
    resources: Resources | None = None  # CPU, memory, GPUs (executor/resources.py)
    credentials: int | None = None  # the version of the credentials the task holds

    def bound(self) -> None:
        super().bound()  # a HeartbeatRequest's TaskCall too
        if self.progress is not None:
            progress_bound(self.progress)
        for name in ("rss", "credentials"):
            if (getattr(self, name) or 0) < 0:
                raise ValueError(f"{name!r} must be 0 or more")


def progress_bound(progress: dict[str, Any]) -> None:
    """A progress report's bounds: a ValueError naming the key out of them."""
    if len(progress) > MAX_PROGRESS_KEYS:
        raise ValueError(f"'progress' must have at most {MAX_PROGRESS_KEYS} keys")
    for k, v in progress.items():
        if not 0 < len(k) <= MAX_PROGRESS_KEY:
            raise ValueError(f"'progress' keys must be 1 to {MAX_PROGRESS_KEY} characters")
        if isinstance(v, str) and len(v) > MAX_PROGRESS_TEXT:
            raise ValueError(f"'progress.{k}' must be at most {MAX_PROGRESS_TEXT} characters")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"'progress.{k}' must be a finite number")
    t = progress.get("time")
    if t is not None and not _is_time(t):
        raise ValueError("'progress.time' must be a time in seconds since the epoch")


def _is_time(t: object) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 1e11


def clean_progress(progress: dict[str, Any]) -> dict[str, ProgressValue]:
    """A task's progress within :func:`progress_bound`, as its executor sends it: a NaN or
    infinite metric (a loss that diverged) as its text, ``"nan"``; anything else that is not a
    number, a string, a bool or None as its text too; long texts cut; keys past the bound
    left out."""
    out: dict[str, ProgressValue] = {}
    for k, v in progress.items():
        if len(out) == MAX_PROGRESS_KEYS:
            break
        if not isinstance(k, str) or not 0 < len(k) <= MAX_PROGRESS_KEY:
            continue
        if k == "time" and not _is_time(v):
            continue
        if isinstance(v, float) and not math.isfinite(v):
            v = str(v)
        elif v is not None and not isinstance(v, (int, float, str, bool)):
            v = str(v)
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_WHOLE:
            continue
        out[k] = v[:MAX_PROGRESS_TEXT] if isinstance(v, str) else v
    return out


@dataclass(frozen=True, kw_only=True)
class HeartbeatRequest(Beat, TaskCall):
    """``POST executor/heartbeat``."""

    @property
    def beat(self) -> Beat:
        return Beat(self.progress, self.rss, self.resources, self.credentials)


@dataclass(frozen=True)
class Credentials(Record):
    """A secure cluster's delegation tokens, newer than those the task holds."""

    version: int
    tokens: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HeartbeatAnswer(Sparse):
    """What the AM answers a heartbeat: usually nothing to do (``{"command": null}``)."""

    command: str | None = None  # "interrupt" (a session cell), "stop" (with 410)
    cell: int | None = None  # the session cell an interrupt is for
    credentials: Credentials | None = None
    beats: int | None = None  # the port of the AM's heartbeat streams (HTTP answers only)
    stacks: int | None = None  # a request for the task's stacks (protocol/stacks.py), by number

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, **super().to_json()}  # "command" always there


@dataclass(frozen=True, kw_only=True)
class LogBatch(TaskCall):
    """``POST executor/logs``: the task's output since the last batch."""

    text: str


CELL_STATUSES = ("ok", "error", "interrupted")


OutcomeT = TypeVar("OutcomeT", bound="CellOutcome")


@dataclass(frozen=True)
class CellOutcome(Sparse):
    """What an executor reports for a cell it ran (``POST /api/v1/executor/result``); only
    what is there in its JSON form: the notebook side takes a "value" key to mean a value was
    sent."""

    status: str  # "ok" | "error" | "interrupted"
    traceback: str | None = None
    value: str | None = None  # base64 cloudpickle {'value', 'pulled', 'missing'}: chief only
    arrow: dict[str, str] | None = None  # pulled tables as base64 Arrow IPC: chief only

    def bound(self) -> None:
        super().bound()  # a request's TaskCall too
        if self.status not in CELL_STATUSES:
            raise ValueError("'status' must be one of " + ", ".join(CELL_STATUSES))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def outcome(self) -> CellOutcome:
        """Just the outcome, without a request's other fields."""
        return CellOutcome(self.status, self.traceback, self.value, self.arrow)

    @classmethod
    def carrying(cls: type[OutcomeT], outcome: CellOutcome, **call: Any) -> OutcomeT:
        """A request of this kind that carries ``outcome`` (its other fields: ``call``): an
        executor's outcome takes its wire form here only."""
        o = outcome
        return cls(status=o.status, traceback=o.traceback, value=o.value, arrow=o.arrow, **call)


@dataclass(frozen=True, kw_only=True)
class ResultRequest(CellOutcome, TaskCall):
    """``POST executor/result``: the task's outcome."""
