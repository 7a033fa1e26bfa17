"""What each task reported over time: a bounded series per task and attempt of its progress
(``progress()`` / ``report()``: step, loss, metrics) and its resource use (CPU %, resident
memory, GPUs), one sample per heartbeat. Kept in the job's history (``metrics.json``).

Bounded, downsampled as samples age: every sample of the last ``RECENT_S`` seconds is kept
(at most ``RECENT_MAX`` of them); older ones go to a list of at most ``OLDER_MAX`` that, when
full, drops every other sample of its older half. So the further back, the coarser: a day-long
job's series holds its whole run in as many samples as a minutes-long one's, and its memory
does not grow with time.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from ..core.protocol import Resources

RECENT_S = 300.0  # every sample this recent is kept...
RECENT_MAX = 384  # ...up to this many (a fast heartbeat keeps the last minute or so)
OLDER_MAX = 256
MAX_SAMPLES = RECENT_MAX + OLDER_MAX
PROGRESS_KEYS = ("step", "epoch", "batch")  # besides the numeric metrics


def _sample(t: float, progress: dict | None, resources: Resources | None) -> dict[str, Any]:
    out: dict[str, Any] = {"t": round(t, 3)}
    for k, v in (progress or {}).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            out[k] = v
        elif k in PROGRESS_KEYS and isinstance(v, (int, float)):
            out[k] = v
    if resources is not None:
        for k in ("cpu_percent", "rss_bytes"):
            v = getattr(resources, k)
            if v is not None:
                out[k] = v
        if resources.gpus:
            out["gpus"] = [
                {"index": g.index, "utilization": g.utilization, "memory_used_mb": g.memory_used_mb}
                for g in resources.gpus
            ]
    return out


class Series:
    """One task's samples in one attempt, oldest first (``samples``)."""

    def __init__(self, recent_max: int = RECENT_MAX, older_max: int = OLDER_MAX):
        self.recent: deque[dict] = deque()
        self.older: list[dict] = []
        self.recent_max, self.older_max = recent_max, older_max

    def add(self, sample: dict) -> None:
        self.recent.append(sample)
        horizon = sample["t"] - RECENT_S
        while self.recent and (len(self.recent) > self.recent_max or self.recent[0]["t"] < horizon):
            self._age(self.recent.popleft())

    def _age(self, sample: dict) -> None:
        self.older.append(sample)
        if len(self.older) > self.older_max:
            half = len(self.older) // 2
            self.older = self.older[:half:2] + self.older[half:]

    @property
    def samples(self) -> list[dict]:
        return [*self.older, *self.recent]


class MetricLog:
    """Every task's series, by attempt: ``{"<attempt>": {"<task>": [sample, ...]}}``."""

    def __init__(self, recent_max: int = RECENT_MAX, older_max: int = OLDER_MAX):
        self.recent_max, self.older_max = recent_max, older_max
        self.series: dict[tuple[int, str], Series] = {}

    def add(
        self,
        attempt: int,
        task: str,
        t: float,
        progress: dict | None,
        resources: Resources | None,
    ) -> None:
        key = (attempt, task)
        if key not in self.series:
            self.series[key] = Series(self.recent_max, self.older_max)
        self.series[key].add(_sample(t, progress, resources))

    def to_json(self) -> dict:
        out: dict[str, dict[str, list[dict]]] = {}
        for (attempt, task), s in sorted(self.series.items()):
            out.setdefault(str(attempt), {})[task] = s.samples
        return {"max_samples": self.recent_max + self.older_max, "attempts": out}
