"""Part 3: delay from a worker to the widget's model (a JobView fed by follow(), as the magic
does) for stamped log lines and for heartbeats (a stamped progress value), p50/p99, at 1 and
1,000 lines/s per worker; and steps/s at those rates vs silent training (does it slow it?).
With ``--before REV``: the 1,000 lines/s side also at that git revision, A B in the same run."""

from __future__ import annotations

import argparse
import time

from bench.lib import before as before_lib
from bench.lib import runners
from bench.lib.common import Context, column, interleave, log, median, pct, ratio
from tony_jupyter.core.protocol import JobSnapshot
from tony_jupyter.widgets.follow import follow
from tony_jupyter.widgets.view import JobView

NAME = "streaming"
ABOUT = "log line and heartbeat delay, worker -> widget model, at 0/1/1,000 lines/s"


class ProbeView(JobView):
    """A widget-mode JobView (not displayed) that stamps what reaches its model."""

    def __init__(self, job_id: str):
        super().__init__(job_id, mode="widget")
        self.log_delays: list[float] = []
        self.beat_delays: list[float] = []
        self._last_probe: dict[str, float] = {}

    def update(self, snapshot: JobSnapshot) -> None:
        now = time.time()
        for task in snapshot.tasks:
            probe = (task.progress or {}).get("probe")
            if probe and probe != self._last_probe.get(task.id):
                self._last_probe[task.id] = probe
                self.beat_delays.append(now - probe)
        super().update(snapshot)

    def append_log(self, task_id: str, text: str) -> None:
        now = time.time()
        for line in text.splitlines():
            if line.startswith("BENCHLOG "):
                self.log_delays.append(now - float(line.split()[1]))
        super().append_log(task_id, text)


def _followed(workers: int, conf: dict) -> dict:
    def watch(job) -> dict:
        view = ProbeView(job.job_id)
        follow(job.client, view)
        return {
            "log_p50_s": pct(view.log_delays, 50),
            "log_p99_s": pct(view.log_delays, 99),
            "log_lines_seen": len(view.log_delays),
            "beat_p50_s": pct(view.beat_delays, 50),
            "beat_p99_s": pct(view.beat_delays, 99),
            "beats_seen": len(view.beat_delays),
        }

    return runners.tony("local", workers, conf, on_job=watch)


def followed(workers: int, conf: dict) -> dict:
    """One side as JSON (before_lib.call runs it in another tree's package too)."""
    return _followed(workers, conf)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--before", default=None, help="also the 1,000 lines/s side at this revision")


def run(ctx: Context) -> dict:
    quick, runs = ctx.quick, ctx.runs
    workers = 1 if quick else 2
    runs = runs or (1 if quick else 3)
    steps = 200 if quick else 1500
    rates = (1000,) if quick else (0, 1, 1000)
    sides = {
        f"{rate}_lines_per_s": (
            lambda rate=rate: _followed(workers, {"steps": steps, "lines_per_s": rate, "probe": 1})
        )
        for rate in rates
    }
    log(f"streaming: {workers} worker(s), rates {rates}, {runs} round(s)")
    before = ctx.args.before if not quick and getattr(ctx.args, "before", None) else None
    if before:
        before_lib.compile_tree()
        old, conf = before_lib.tree(before), {"steps": steps, "lines_per_s": 1000, "probe": 1}
        sides[f"1000_lines_per_s_at_{before}"] = lambda: before_lib.call(
            old, "bench.streaming:followed", workers, conf
        )
        sides["1000_lines_per_s_now"] = lambda: before_lib.call(
            before_lib.REPO, "bench.streaming:followed", workers, conf
        )
    rows = interleave(runs, sides, log)
    keys = ("log_p50_s", "log_p99_s", "beat_p50_s", "beat_p99_s", "steps_per_s")
    med = {side: {k: median(column(got, k)) for k in keys} for side, got in rows.items()}
    silent = med.get("0_lines_per_s", {}).get("steps_per_s")
    for side in med:
        med[side]["steps_per_s_vs_silent"] = ratio(med[side]["steps_per_s"], silent)
    out = {"workers": workers, "steps": steps, "runs": runs, "median": med, "all": rows}
    if before:
        now, then = med["1000_lines_per_s_now"], med[f"1000_lines_per_s_at_{before}"]
        out["before_rev"] = before
        out["log_p99_now_vs_before"] = ratio(now["log_p99_s"], then["log_p99_s"])
        out["log_p50_now_vs_before"] = ratio(now["log_p50_s"], then["log_p50_s"])
    return out
