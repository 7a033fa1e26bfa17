"""A task's record in the AM's task table: its state, where it runs, its last heartbeat and
what it reported. The Coordinator owns the table; the rules and views read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..protocol import TaskState


@dataclass
class Task:
    id: str
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
    rss_bytes: int | None = None  # resident memory of the task's processes, from heartbeats
    cpu_percent: float | None = None
    gpus: list = field(default_factory=list)
    progress: dict = field(default_factory=dict)
    traceback: str | None = None
    diagnostics: str = ""
    attempt: int = 1  # the job's, or this task's own in an elastic job (am/elastic.py)
