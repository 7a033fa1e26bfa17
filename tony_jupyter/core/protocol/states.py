"""The states of a job, its tasks and a session's cells, and the AM's event log's entries.

States are string enums (in JSON, their value); records are frozen dataclasses with one JSON
form (``to_json``/``from_json``, records.py) and ``SCHEMA_VERSION``, like ``JobSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..records import Record

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
    STALL = "stall"  # the job was marked stalled (stalled: true), or its steps went on (false)

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
