"""Latency of a trivial cell in a warm session vs the same cell as a one-shot job
(A B A B ..., medians), through the ``%%tony`` magic in an in-process IPython. Local backend;
YARN too when a devcluster runs (not with --quick or --no-yarn).

    .venv/bin/python -m bench session [--runs 7]
"""

from __future__ import annotations

import os
import statistics
import time

from IPython.testing.globalipapp import start_ipython

from bench.lib.common import Context

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
    finally:
        if hadoop is not None:  # the parts after this one see the devcluster again
            os.environ["HADOOP_CONF_DIR"] = hadoop
    return result
