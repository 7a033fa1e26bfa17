"""What an executor and its AM say to each other (``/api/v1/executor/*``): register, the
cluster spec, heartbeats and their answers (a command, the session cell it is for, newer
credentials), log batches and the task's outcome. Every call names its task and attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import Record, Sparse

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


@dataclass(frozen=True, kw_only=True)
class RegisterRequest(TaskCall):
    """``POST executor/register``: the launch's one-time secret for the task's own token.
    ``host`` and ``container`` are claims the AM does not use (its provider knows them)."""

    port: int
    pid: int
    host: str | None = None
    container: str | None = None


@dataclass(frozen=True)
class RegisterAnswer(Record):
    token: str  # the task's own, for all its later calls
    ok: bool = True


@dataclass(frozen=True)
class ClusterSpecAnswer(Record):
    """``GET executor/cluster-spec``: None until every task registered (a long-poll)."""

    cluster_spec: dict[str, list[str]] | None = None  # task type -> ["host:port", ...]


@dataclass(frozen=True)
class Beat(Sparse):
    """One heartbeat: what the HTTP route's body and a heartbeat stream's line carry
    (am/beats.py), each field optional."""

    progress: dict[str, Any] | None = None  # the task's runtime.report, as the user made it
    rss: int | None = None  # bytes
    resources: dict[str, Any] | None = None  # CPU, memory, GPUs (executor/resources.py)
    credentials: int | None = None  # the version of the credentials the task holds


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

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, **super().to_json()}  # "command" always there


@dataclass(frozen=True, kw_only=True)
class LogBatch(TaskCall):
    """``POST executor/logs``: the task's output since the last batch."""

    text: str


@dataclass(frozen=True)
class CellOutcome(Sparse):
    """What an executor reports for a cell it ran (``POST /api/v1/executor/result``); only
    what is there in its JSON form: the notebook side takes a "value" key to mean a value was
    sent."""

    status: str  # "ok" | "error" | "interrupted"
    traceback: str | None = None
    value: str | None = None  # base64 cloudpickle {'value', 'pulled', 'missing'}: chief only
    arrow: dict[str, str] | None = None  # pulled tables as base64 Arrow IPC: chief only

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def outcome(self) -> CellOutcome:
        """Just the outcome, without a request's other fields."""
        return CellOutcome(self.status, self.traceback, self.value, self.arrow)

    def outcome_fields(self) -> dict[str, Any]:
        """The outcome's fields, for a request that carries it."""
        return {"status": self.status, "traceback": self.traceback, "value": self.value,
                "arrow": self.arrow}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ResultRequest(CellOutcome, TaskCall):
    """``POST executor/result``: the task's outcome."""
