"""When a running job is stalled: every task heartbeats, but none has reported a new step
(``tony_jupyter.report()``, the Keras ``progress()`` callback) for longer than the job's own
step times allow.

The threshold is ``tony.stall.factor`` times the median of the job's recent step intervals
(each task's, as the AM saw its step change, pooled), within ``tony.stall.floor-sec`` and
``tony.stall.ceiling-sec``; before two steps of a task have been seen, the ceiling. A job
that has reported no step at all is never stalled (there is nothing to compare with), nor is a
session (it waits for cells), nor a job with a task whose heartbeats are late: that is a lost
task, which the missed-heartbeat rule (rules.py) judges. The tasks furthest behind are those
whose last step is the lowest, when the tasks that report steps are not all at one.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# What a step's position is made of, most significant first (runtime.report's keys)
POSITION = ("epoch", "step", "batch")
WINDOW = 64  # the recent step intervals the median is taken over
LATE_BEATS = 3  # a task whose last heartbeat is older than this many periods is not heard


def position(progress: Mapping[str, Any] | None) -> tuple[float, ...] | None:
    """A progress report's step as a tuple that orders (None: it reports no step)."""
    if not progress:
        return None
    values = [progress.get(k) for k in POSITION]
    if all(v is None for v in values):
        return None
    return tuple(float(v) if isinstance(v, (int, float)) else -1.0 for v in values)


def words(progress: Mapping[str, Any] | None) -> str:
    """A task's step as the widget says it: ``epoch 2 step 15``, or ``no step yet``."""
    parts = [f"{k} {progress[k]}" for k in POSITION if progress and progress.get(k) is not None]
    return " ".join(parts) or "no step yet"


def threshold(intervals: Sequence[float], factor: float, floor: float, ceiling: float) -> float:
    """How long without a new step makes the job stalled: ``factor`` x the median interval,
    within ``[floor, ceiling]``; the ceiling before any interval is known."""
    if not intervals:
        return ceiling
    return min(max(factor * statistics.median(intervals), floor), ceiling)


@dataclass
class Found:
    """A stall the watch found: the Coordinator marks it (an event, the snapshot's ``stall``)."""

    since: float
    threshold_s: float
    behind: tuple[str, ...]
    steps: dict[str, str] = field(default_factory=dict)


class StallWatch:
    """Each task's last step and when it changed, over one attempt."""

    def __init__(self, factor: float, floor: float, ceiling: float):
        self.factor, self.floor, self.ceiling = factor, floor, ceiling
        self.reset()

    def reset(self) -> None:
        """A new attempt: its steps start again."""
        self.last: dict[str, tuple[float, ...]] = {}
        self.changed_at: dict[str, float] = {}
        self.intervals: deque[float] = deque(maxlen=WINDOW)
        self.newest = 0.0  # the last new step of any task

    def observe(self, task: str, progress: Mapping[str, Any] | None, at: float) -> bool:
        """A heartbeat's progress; True when it is a new step of the task."""
        pos = position(progress)
        if pos is None or pos == self.last.get(task):
            return False
        if task in self.changed_at:
            self.intervals.append(at - self.changed_at[task])
        self.last[task], self.changed_at[task] = pos, at
        self.newest = max(self.newest, at)
        return True

    @property
    def limit(self) -> float:
        return threshold(self.intervals, self.factor, self.floor, self.ceiling)

    def due(self, now: float) -> bool:
        """No new step for longer than the limit: worth a :meth:`check` (which looks at every
        task; this, each AM tick, at nothing but the newest step)."""
        return bool(self.ceiling and self.changed_at) and now - self.newest > self.limit

    def check(
        self,
        now: float,
        live: Mapping[str, tuple[float | None, Mapping[str, Any] | None]],
        beat_s: float,
    ) -> Found | None:
        """``live``: each running task's last heartbeat and progress. A :class:`Found` when
        the job is stalled at ``now``."""
        if not live or not self.due(now):
            return None
        if any(hb is None or now - hb > LATE_BEATS * beat_s for hb, _ in live.values()):
            return None  # a task not heard from: lost, not stalled (rules.missed_heartbeats)
        since, limit = self.newest, self.limit
        steps = {t: words(p) for t, (_, p) in sorted(live.items())}
        return Found(since, round(limit, 3), self.behind(live), steps)

    def behind(self, live: Mapping[str, object]) -> tuple[str, ...]:
        """The tasks at the lowest step, when the tasks that report steps are not all at the
        same one (none otherwise: a task that reports no step, or all tasks at one step, say
        nothing about who is behind; their stacks do)."""
        at = {t: self.last[t] for t in live if t in self.last}
        if len(set(at.values())) < 2:
            return ()
        lowest = min(at.values())
        return tuple(sorted(t for t, p in at.items() if p == lowest))
