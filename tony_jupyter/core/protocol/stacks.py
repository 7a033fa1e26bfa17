"""Every task's stacks on demand: what the AM asks a task's sidecar for (a request number in
its heartbeat's answer), what the sidecar sends back (``POST executor/stacks``) and what the
job's owner reads (``GET stacks``)."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class StackThread(Record):
    """One thread of a group's stacks: its name (Python 3.13+) and its frames, most recent
    first, down to the task's code."""

    name: str = ""
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class StackGroup(Record):
    """Tasks whose stacks are the same (stackgroups.py): their threads, the executor's own
    counted, not shown; ``odd``: fewer tasks share these than the commonest stacks;
    ``behind``: a stalled job's task furthest behind is among them."""

    tasks: tuple[str, ...]
    threads: tuple[StackThread, ...] = ()
    own_threads: int = 0
    odd: bool = False
    behind: bool = False
    error: str | None = None  # for tasks that sent no dump: why


@dataclass(frozen=True)
class StackGroups(Record):
    """Every task's stacks grouped, as the job page shows them (``GET /tony/api/jobs/<id>/
    stacks``, a stalled job's detail): the groups, largest first, each task's dump time, the
    tasks that did not answer in time."""

    groups: tuple[StackGroup, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)  # each task's: signal, dump, read
    missing: tuple[str, ...] = ()
