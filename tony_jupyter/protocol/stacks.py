"""Every task's stacks on demand: what the AM asks a task's sidecar for (a request number in
its heartbeat's answer), what the sidecar sends back (``POST executor/stacks``) and what the
job's owner reads (``GET stacks``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Record
from .executor import MAX_NAME, TaskCall
from .views import TaskStacks

MAX_STACKS_TEXT = 1 << 20  # one task's dump: all its threads, within reason


@dataclass(frozen=True, kw_only=True)
class StacksReport(TaskCall):
    """``POST executor/stacks``: a task's dump for the AM's request ``request``: every thread's
    Python stack (faulthandler's text), or why there is none (``error``)."""

    request: int
    text: str = ""
    error: str | None = None
    seconds: float = 0.0  # from the sidecar's signal to the dump read back

    def bound(self) -> None:
        super().bound()
        if self.request < 1:
            raise ValueError("'request' must be 1 or more")
        if len(self.text) > MAX_STACKS_TEXT:
            raise ValueError(f"'text' must be at most {MAX_STACKS_TEXT} characters")
        if len(self.error or "") > MAX_NAME * 4:
            raise ValueError(f"'error' must be at most {MAX_NAME * 4} characters")
        if not 0 <= self.seconds < 1e6:
            raise ValueError("'seconds' must be from 0 to 1e6")


@dataclass(frozen=True)
class StacksAnswer(Record):
    """``GET stacks``: the tasks that answered request ``request`` within the wait, and those
    that did not (``missing``: not running, or their sidecar did not answer in time)."""

    request: int
    tasks: tuple[TaskStacks, ...] = ()
    missing: tuple[str, ...] = ()
    seconds: float = 0.0  # from the request to the answer
