"""Every task's stacks on demand: the AM's open request and the dumps its tasks sent back.

The job's owner asks (``GET stacks``, or the stall check: stalls.py); each running task's
heartbeat answer then carries the request's number; its sidecar signals the task, reads the
dump (executor/stacks.py) and posts it (``POST executor/stacks``). A request still open
(younger than :data:`REUSE_S` and not answered by all) is shared by whoever asks meanwhile:
a second viewer does not make every task dump again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from ..core.protocol import StacksAnswer, StacksReport, TaskStacks

REUSE_S = 2.0  # an open request younger than this serves a new asker too


class StackRequests:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.request = 0
        self.asked_at = 0.0
        self.wanted: frozenset[str] = frozenset()
        self.got: dict[str, TaskStacks] = {}

    def ask(self, tasks: Iterable[str]) -> int:
        """A request of ``tasks``' stacks (a new one unless an open one asks the same); its
        number."""
        tasks = frozenset(tasks)
        now = self.clock()
        open_ = self.request and not self.complete and now - self.asked_at < REUSE_S
        if open_ and tasks <= self.wanted:
            return self.request
        self.request += 1
        self.asked_at, self.wanted, self.got = now, tasks, {}
        return self.request

    @property
    def complete(self) -> bool:
        return self.wanted <= self.got.keys()

    def for_task(self, task: str) -> int | None:
        """The request a task's heartbeat answer carries: None when it has nothing to send."""
        if task in self.wanted and task not in self.got:
            return self.request
        return None

    def add(self, report: StacksReport, host: str | None) -> bool:
        """A task's dump; False for one of an older request (dropped)."""
        if report.request != self.request or report.task not in self.wanted:
            return False
        self.got[report.task] = TaskStacks(
            report.task, report.text, report.error, report.seconds, host
        )
        return True

    def answer(self, request: int, tasks: Iterable[str] | None = None) -> StacksAnswer:
        """What request ``request`` has so far, of ``tasks`` (default: all it asked)."""
        names = sorted(self.wanted if tasks is None else set(tasks) & self.wanted)
        got = self.got if request == self.request else {}
        return StacksAnswer(
            request,
            tuple(got[t] for t in names if t in got),
            tuple(t for t in names if t not in got),
            round(self.clock() - self.asked_at, 3),
        )
