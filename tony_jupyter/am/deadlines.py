"""When each registered task's heartbeats are due (the missed-heartbeat rule of rules.py)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from ..core.protocol import TaskState
from .tasks import Task


class Deadlines:
    """When each registered task's heartbeats are due, in a heap: a tick looks only at the
    tasks whose deadline has passed, not at every task (10,000 tasks, 5 ticks a second: 50,000
    checks a second before). A heartbeat only sets ``last_heartbeat``; a task whose deadline
    passed but which beat since is pushed back with its new deadline, so each task costs the
    tick about one heap step per missed-heartbeat limit. A task is silent, as before, when
    ``now - last_heartbeat > limit`` while it is REGISTERED or RUNNING."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, int]] = []
        self._seq = 0  # ties: first pushed, first looked at

    def watch(self, task: Task, limit: float) -> None:
        """``task`` registered (its ``last_heartbeat`` is set): from now on its beats count."""
        assert task.last_heartbeat is not None
        self._seq += 1
        heapq.heappush(self._heap, (task.last_heartbeat + limit, self._seq, task.id, task.attempt))

    def silent(self, tasks: Mapping[str, Task], now: float, limit: float) -> Task | None:
        """A task silent past ``limit``, if any (with several, the one whose deadline the heap
        reached first)."""
        heap = self._heap
        while heap and heap[0][0] < now:
            _, _, task_id, attempt = heap[0]
            t = tasks.get(task_id)
            if (
                t is None
                or t.attempt != attempt
                or t.state not in (TaskState.REGISTERED, TaskState.RUNNING)
                or t.last_heartbeat is None
            ):
                heapq.heappop(heap)  # an ended task's, or an ended attempt's
                continue
            if now - t.last_heartbeat > limit:
                return t
            self._seq += 1
            heapq.heapreplace(heap, (t.last_heartbeat + limit, self._seq, task_id, attempt))
        return None
