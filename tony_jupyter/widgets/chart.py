"""A small chart of the chief's loss and metrics, drawn as inline SVG: live in the widget (an
ipywidgets HTML) and in the final report that replaces it, so a saved notebook shows it
without a kernel or any JavaScript. One sparkline per metric (loss first, at most
``MAX_METRICS``), each on its own scale, x = the step the chief reported (or the sample).
"""

from __future__ import annotations

import html
import math

MAX_POINTS = 400  # past it every other point is dropped: the whole run, coarser
MAX_METRICS = 4
SKIP = {"step", "steps", "total_steps", "epoch", "epochs", "epoch_done", "batch", "time"}
W, H, PAD = 180, 56, 3


class MetricHistory:
    """The chief's numeric progress values, one point per change."""

    def __init__(self) -> None:
        self.points: dict[str, list[tuple[float, float]]] = {}
        self._last: dict | None = None
        self._n = 0

    def add(self, progress: dict) -> None:
        if not progress or progress == self._last:
            return
        self._last = dict(progress)
        self._n += 1
        step = progress.get("step")
        x = float(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else None
        if x is None:
            x = float(self._n)
        for k, v in progress.items():
            if k in SKIP or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if not math.isfinite(v):
                continue
            pts = self.points.setdefault(k, [])
            if pts and x < pts[-1][0]:
                x = pts[-1][0]  # a new attempt restarts the steps: keep x moving forward
            pts.append((x, float(v)))
            if len(pts) > MAX_POINTS:
                self.points[k] = pts[::2]

    def metrics(self) -> list[str]:
        names = [k for k, pts in self.points.items() if len(pts) >= 2]
        names.sort(key=lambda k: (k != "loss", k.startswith("val_")))
        return names[:MAX_METRICS]


def _sparkline(name: str, pts: list[tuple[float, float]]) -> str:
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    sx = (W - 2 * PAD) / ((x1 - x0) or 1)
    sy = (H - 2 * PAD - 12) / ((y1 - y0) or 1)
    path = " ".join(f"{PAD + (x - x0) * sx:.1f},{H - PAD - (y - y0) * sy:.1f}" for x, y in pts)
    label = f"{name} {ys[-1]:.4g} (min {y0:.4g}, max {y1:.4g})"
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' "
        f"viewBox='0 0 {W} {H}' role='img' aria-label='{html.escape(label)}'>"
        f"<title>{html.escape(label)}</title>"
        f"<text x='{PAD}' y='10' font-size='10' fill='currentColor'>"
        f"{html.escape(name)} {ys[-1]:.4g}</text>"
        f"<polyline fill='none' stroke='#1f77b4' stroke-width='1.5' points='{path}'/></svg>"
    )


def chart_html(history: MetricHistory) -> str:
    """The sparklines side by side; "" until some metric has two points."""
    names = history.metrics()
    if not names:
        return ""
    lines = "".join(
        f"<div style='margin-right:10px'>{_sparkline(k, history.points[k])}</div>" for k in names
    )
    return f"<div class='tony-chart' style='display:flex;flex-wrap:wrap'>{lines}</div>"
