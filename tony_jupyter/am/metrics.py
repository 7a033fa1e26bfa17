"""What each task reported over time: a bounded series per task and attempt of its progress
(``progress()`` / ``report()``: step, loss, metrics) and its resource use (CPU %, resident
memory, GPUs), one sample per heartbeat. Kept in the job's history (``metrics.json``).

Bounded: past ``MAX_SAMPLES`` a series keeps every other sample and then takes one heartbeat
in two (and so on), so a week-long job's series is as long as a minute-long one's, spread over
the whole run at a coarser step.
"""

from __future__ import annotations

import math
from typing import Any

MAX_SAMPLES = 512
PROGRESS_KEYS = ("step", "epoch", "batch")  # besides the numeric metrics


def _sample(t: float, progress: dict | None, resources: dict | None) -> dict[str, Any]:
    out: dict[str, Any] = {"t": round(t, 3)}
    for k, v in (progress or {}).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            out[k] = v
        elif k in PROGRESS_KEYS and isinstance(v, (int, float)):
            out[k] = v
    for k in ("cpu_percent", "rss_bytes"):
        v = (resources or {}).get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
    gpus = (resources or {}).get("gpus")
    if isinstance(gpus, list) and gpus:
        out["gpus"] = [
            {k: g.get(k) for k in ("index", "utilization", "memory_used_mb")}
            for g in gpus
            if isinstance(g, dict)
        ]
    return out


class Series:
    """One task's samples in one attempt."""

    def __init__(self, limit: int = MAX_SAMPLES):
        self.limit = limit
        self.samples: list[dict] = []
        self.stride = 1  # keep one heartbeat in ``stride``
        self.seen = 0

    def add(self, sample: dict) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.samples.append(sample)
        if len(self.samples) >= self.limit:
            self.samples = self.samples[::2]
            self.stride *= 2


class MetricLog:
    """Every task's series, by attempt: ``{"<attempt>": {"<task>": [sample, ...]}}``."""

    def __init__(self, limit: int = MAX_SAMPLES):
        self.limit = limit
        self.series: dict[tuple[int, str], Series] = {}

    def add(
        self, attempt: int, task: str, t: float, progress: dict | None, resources: dict | None
    ) -> None:
        key = (attempt, task)
        if key not in self.series:
            self.series[key] = Series(self.limit)
        self.series[key].add(_sample(t, progress, resources))

    def to_json(self) -> dict:
        out: dict[str, dict[str, list[dict]]] = {}
        for (attempt, task), s in sorted(self.series.items()):
            out.setdefault(str(attempt), {})[task] = list(s.samples)
        return {"max_samples": self.limit, "attempts": out}
