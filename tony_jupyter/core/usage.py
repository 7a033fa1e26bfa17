"""Each task's live use over time, as the widget and the job page show it: samples of CPU,
memory and GPUs (the shape of am/metrics.py's series), drawn as sparklines, and the job's
GPUs-idle share, named when it stays high (a job waiting on its input pipeline).

A sample is ``{"t", "cpu_percent", "rss_bytes", "gpus": [{"utilization", "memory_used_mb"}]}``,
any key missing; values come from tasks and are read defensively: nothing here raises on one.
"""

from __future__ import annotations

import html
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .protocol import JobSnapshot

SAMPLES_KEPT = 64  # per task in the widget: a minute or two at the heartbeat; a point a pixel
SPARK_W, SPARK_H = 64, 14
IDLE_BELOW = 10.0  # percent: a GPU this busy or less is idle
IDLE_WINDOW_S = 120.0  # the share is the last two minutes'...
IDLE_MIN_SPAN_S = 30.0  # ...once they cover at least this long (a high share that stays)
IDLE_SHOWN_AT = 0.5  # named when at least half the GPU samples are idle


def _num(value: object) -> float | None:
    if type(value) is float:  # the common case, first
        return value if math.isfinite(value) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _gpus(sample: Mapping) -> list[Mapping]:
    gpus = sample.get("gpus")
    return [g for g in gpus if isinstance(g, Mapping)] if isinstance(gpus, list) else []


def gpu_utilization(sample: Mapping) -> float | None:
    """The mean utilization of a sample's GPUs, None without any."""
    us = [u for g in _gpus(sample) if (u := _num(g.get("utilization"))) is not None]
    return sum(us) / len(us) if us else None


def gpu_memory_mb(sample: Mapping) -> float | None:
    """The memory a sample's GPUs hold together, None without any."""
    ms = [m for g in _gpus(sample) if (m := _num(g.get("memory_used_mb"))) is not None]
    return sum(ms) if ms else None


# What a sparkline draws: key -> (what of a sample, its title, the unit's word, the floor of
# its scale: percentages are drawn against 100 at least, so an idle task reads as idle).
SERIES = {
    "cpu": (lambda s: _num(s.get("cpu_percent")), "CPU", "%", 100.0),
    "memory": (lambda s: _num(s.get("rss_bytes")), "memory", "B", 0.0),
    "gpu": (gpu_utilization, "GPU utilization", "%", 100.0),
    "gpu_memory": (gpu_memory_mb, "GPU memory", "MB", 0.0),
}


def values(samples: Iterable[Mapping], key: str) -> list[float]:
    """One series' values out of samples, oldest first (samples without it skipped)."""
    pick = SERIES[key][0]
    return [v for s in samples if isinstance(s, Mapping) and (v := pick(s)) is not None]


def _shown(v: float, unit: str) -> str:
    if unit == "B":
        return f"{v / 2**20:.0f} MiB"
    if unit == "MB":
        return f"{v / 1024:.1f} GiB"
    return f"{v:.0f}%"


def sparkline_svg(vals: Sequence[float], key: str) -> str:
    """A small inline SVG of ``vals`` (oldest left), its title naming the last and the peak;
    "" for fewer than two values (one point is no trend)."""
    if len(vals) < 2:
        return ""
    _, title, unit, floor = SERIES[key]
    top = max(max(vals), floor) or 1.0
    n = len(vals) - 1
    points = " ".join(
        f"{i * SPARK_W / n:.1f},{SPARK_H - 1 - max(0.0, v) / top * (SPARK_H - 2):.1f}"
        for i, v in enumerate(vals)
    )
    label = f"{title}: now {_shown(vals[-1], unit)}, peak {_shown(max(vals), unit)}"
    return (
        f"<svg class='tony-spark' data-series='{key}' width='{SPARK_W}' height='{SPARK_H}' "
        f"viewBox='0 0 {SPARK_W} {SPARK_H}' role='img' style='vertical-align:middle'>"
        f"<title>{html.escape(label)}</title>"
        f"<polyline points='{points}' fill='none' stroke='currentColor' stroke-width='1.2'/>"
        "</svg>"
    )


@dataclass(frozen=True)
class GpuIdle:
    """The job's GPUs over its last ``IDLE_WINDOW_S``: the share of GPU samples at or under
    ``IDLE_BELOW`` percent, over how long, on how many GPUs."""

    share: float
    seconds: float
    gpus: int

    @property
    def high(self) -> bool:
        return self.share >= IDLE_SHOWN_AT and self.seconds >= IDLE_MIN_SPAN_S

    def text(self) -> str:
        m, s = divmod(round(self.seconds), 60)
        span = f"{m}m {s:02d}s" if m else f"{s} s"
        return (
            f"GPUs idle {self.share:.0%} of the last {span} ({self.gpus} GPU(s) under "
            f"{IDLE_BELOW:.0f}% utilization): the job may be waiting on its input pipeline "
            "(data loading), not computing"
        )


def gpu_idle(series: Mapping[str, Sequence[Mapping]]) -> GpuIdle | None:
    """The GPUs-idle share of every task's samples (``{task: [sample, ...]}``) over the last
    ``IDLE_WINDOW_S`` before the newest sample; None when no sample has a GPU's utilization."""
    times = [
        t
        for samples in series.values()
        for s in samples
        if isinstance(s, Mapping) and (t := _num(s.get("t"))) is not None
    ]
    if not times:
        return None
    end = max(times)
    idle = total = 0
    first = end
    gpus: set[tuple[str, object]] = set()
    for task, samples in series.items():
        for s in samples:
            t = _num(s.get("t")) if isinstance(s, Mapping) else None
            if t is None or t < end - IDLE_WINDOW_S:
                continue
            for i, g in enumerate(_gpus(s)):
                u = _num(g.get("utilization"))
                if u is None:
                    continue
                total += 1
                idle += u <= IDLE_BELOW
                first = min(first, t)
                gpus.add((task, g.get("index", i)))
    if not total:
        return None
    return GpuIdle(idle / total, end - first, len(gpus))


def snapshot_sample(snap: JobSnapshot, task_id: str) -> dict | None:
    """A task's sample out of a snapshot (what its last heartbeat said), None without one."""
    t = snap.task(task_id)
    beat = _num(t.last_heartbeat) if t is not None else None
    if t is None or beat is None:
        return None
    return {
        "t": beat,
        "cpu_percent": t.cpu_percent,
        "rss_bytes": t.rss_bytes,
        "gpus": [
            {"utilization": g.utilization, "memory_used_mb": g.memory_used_mb} for g in t.gpus
        ],
    }


class UsageHistory:
    """The widget's recent samples per task, taken from the snapshots it is shown: one per
    heartbeat (a snapshot whose beat is the last one's adds nothing), at most ``kept`` each,
    a new attempt starting afresh. What it draws is kept until a task's next sample, as the
    widget renders every snapshot."""

    def __init__(self, kept: int = SAMPLES_KEPT):
        self.kept = kept
        self.attempt: int | None = None
        self.series: dict[str, deque[dict]] = {}
        self._drawn: dict[str, tuple[float, dict[str, str]]] = {}  # task -> (its last t, sparks)
        self._idle: tuple[int, GpuIdle | None] | None = None  # (samples added, the share)
        self._added = 0

    def add(self, snap: JobSnapshot) -> None:
        if snap.attempt != self.attempt:
            self.attempt, self.series, self._drawn = snap.attempt, {}, {}
        for t in snap.tasks:
            sample = snapshot_sample(snap, t.id)
            if sample is None:
                continue
            got = self.series.setdefault(t.id, deque(maxlen=self.kept))
            if not got or got[-1]["t"] < sample["t"]:
                got.append(sample)
                self._added += 1

    def sparklines(self, task_id: str) -> dict[str, str]:
        """A task's sparkline per series (``SERIES``' keys), "" where there is none."""
        samples = self.series.get(task_id, ())
        last = samples[-1]["t"] if samples else -1.0
        drawn = self._drawn.get(task_id)
        if drawn is None or drawn[0] != last:
            drawn = (last, {key: sparkline_svg(values(samples, key), key) for key in SERIES})
            self._drawn[task_id] = drawn
        return drawn[1]

    def gpu_idle(self) -> GpuIdle | None:
        if self._idle is None or self._idle[0] != self._added:
            self._idle = (self._added, gpu_idle({k: list(v) for k, v in self.series.items()}))
        return self._idle[1]
