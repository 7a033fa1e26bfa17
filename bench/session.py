"""Latency of a trivial cell in a warm session vs the same cell as a one-shot job
(A B A B ..., medians), through the ``%%tony`` magic in an in-process IPython. Local backend;
YARN too when a devcluster runs (not with --quick or --no-yarn). With ``--before REV``: warm
cells of this tree and of tony-jupyter at that git revision (bench/lib/before.py), a session
each, batches of cells A B A B, p50 and p90 of every cell.

    .venv/bin/python -m bench session [--runs 7] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from IPython.testing.globalipapp import start_ipython

from bench.lib import before as before_lib
from bench.lib.common import Context, pct, ratio

NAME = "session"
ABOUT = "a trivial cell in a warm session vs the same cell as a one-shot job (local; YARN)"

CELL = "import os\nint(os.environ['TASK_INDEX'])"


def timed(ip, line: str) -> float:
    t = time.perf_counter()
    assert ip.run_cell_magic("tony", line, CELL) == 0
    return time.perf_counter() - t


def measure(ip, line: str, runs: int, interleave: bool = True) -> dict:
    """A B A B ... where the cluster holds both at once (the devcluster's 8-vcore default
    partition does: 3 + 3 vcores); with ``interleave=False`` the warm cells run first, then
    (session stopped) the one-shot jobs, for a cluster too small for both."""
    from tony_jupyter import session as sessions

    ip.run_line_magic("tony", f"session start {line}")
    warm_session = sessions.current()
    warm, oneshot = [], []
    try:
        for _ in range(runs):
            warm.append(timed(ip, ""))
            if interleave:
                sessions.set_current(None)  # the next cell is a one-shot job
                try:
                    oneshot.append(timed(ip, line))
                finally:
                    sessions.set_current(warm_session)
    finally:
        ip.run_line_magic("tony", "session stop")
    if not interleave:
        oneshot = [timed(ip, line) for _ in range(runs)]
    return {
        "interleaved": interleave,
        "warm_cell_median_s": round(statistics.median(warm), 3),
        "one_shot_job_median_s": round(statistics.median(oneshot), 3),
        "speedup": round(statistics.median(oneshot) / statistics.median(warm), 1),
        "warm_all_s": [round(x, 3) for x in warm],
        "one_shot_all_s": [round(x, 3) for x in oneshot],
    }


def warm_cells(n: int, line: str = "--workers 2 --no-tensorboard") -> list[float]:
    """``n`` trivial cells in a warm session (the first cell, which warms it, not counted)."""
    ip = start_ipython()
    ip.run_line_magic("load_ext", "tony_jupyter")
    ip.display_formatter.active_types = ["text/plain"]
    ip.run_line_magic("tony", f"session start {line}")
    try:
        timed(ip, "")
        return [timed(ip, "") for _ in range(n)]
    finally:
        ip.run_line_magic("tony", "session stop")


def before_and_now(rev: str, rounds: int, per_round: int = 10) -> dict:
    old = before_lib.tree(rev)
    now_side, old_side = [], []
    for _ in range(rounds):
        now_side += before_lib.call(before_lib.REPO, "bench.session:warm_cells", per_round)
        old_side += before_lib.call(old, "bench.session:warm_cells", per_round)
    return {
        "before_rev": rev,
        "cells_per_side": len(now_side),
        "now_p50_s": pct(now_side, 50),
        "now_p90_s": pct(now_side, 90),
        "before_p50_s": pct(old_side, 50),
        "before_p90_s": pct(old_side, 90),
        "now_vs_before_p50": ratio(pct(now_side, 50), pct(old_side, 50)),
        "now_all_s": [round(x, 4) for x in now_side],
        "before_all_s": [round(x, 4) for x in old_side],
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--before", default=None, help="also warm cells at this git revision")


def run(ctx: Context) -> dict:
    runs = ctx.runs or (2 if ctx.quick else 7)
    hadoop = os.environ.pop("HADOOP_CONF_DIR", None)
    try:
        ip = start_ipython()
        ip.run_line_magic("load_ext", "tony_jupyter")
        ip.display_formatter.active_types = ["text/plain"]
        result = {
            "runs": runs,
            "cell": CELL,
            "local_2_workers": measure(ip, "--workers 2 --no-tensorboard", runs),
        }
        if ctx.cluster is not None and not ctx.quick:
            if not hadoop:
                raise RuntimeError("YARN needs HADOOP_CONF_DIR (the devcluster's env)")
            os.environ["HADOOP_CONF_DIR"] = hadoop
            line = "--workers 2 --memory 512m --no-tensorboard"
            result["yarn_2_workers"] = measure(ip, line, runs)
        if ctx.args.before and not ctx.quick:
            before_lib.compile_tree()
            result["local_2_workers_warm_vs_before"] = before_and_now(ctx.args.before, runs)
    finally:
        if hadoop is not None:  # the parts after this one see the devcluster again
            os.environ["HADOOP_CONF_DIR"] = hadoop
    return result
