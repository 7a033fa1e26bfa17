"""Time from running a cell to every task running user code: tony-jupyter's local backend vs
the same processes started by hand with TF_CONFIG (A B A B ..., medians); with ``--before REV``
also tony-jupyter as it was at that git revision (bench/lib/before.py), in the same rounds.
Also the resident memory of the AM and of an idle executor (``footprint()``, which the
footprint part uses too).

    .venv/bin/python -m bench startup [--runs 5] [--workers 2] [--before REV] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.lib import before as before_lib
from bench.lib.common import Context
from tony_jupyter.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.options import parse_job_args

NAME = "startup"
ABOUT = "the original: cell -> user code, trivial cell, local, vs by hand; AM and executor RSS"

# The first line of user code records when it ran; nothing else, so the figure is pure overhead.
CELL = (
    "import os, time\n"
    "open(os.path.join(OUT, os.environ['TASK_INDEX']), 'w').write(repr(time.time()))\n"
)


def wait_for(out: Path, n: int, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(out.iterdir())
        if len(files) == n:
            try:
                return max(float(f.read_text()) for f in files)
            except ValueError:
                pass  # a file is being written
        time.sleep(0.005)
    raise TimeoutError(f"only {len(list(out.iterdir()))}/{n} tasks started")


def run_tony(workers: int) -> float:
    out = Path(tempfile.mkdtemp())
    _, spec = parse_job_args(f"--workers {workers}")
    bundle = make_bundle(CELL, {"OUT": str(out)})
    t0 = time.time()
    job = TonyJob(backend_local.submit(spec, bundle))
    took = wait_for(out, workers) - t0
    job.wait(60)
    job.client.release()
    job.client.wait_am_exit()
    return took


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_by_hand(workers: int) -> float:
    out = Path(tempfile.mkdtemp())
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    code = f"OUT = {str(out)!r}\n" + CELL
    t0 = time.time()
    procs = []
    for i in range(workers):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        env = dict(os.environ, TF_CONFIG=tf_config, TASK_INDEX=str(i))
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env))
    took = wait_for(out, workers) - t0
    for p in procs:
        p.wait()
    return took


def footprint() -> dict:
    """RSS of the AM and of an executor whose task is idle (sleeping)."""
    _, spec = parse_job_args("--workers 1")
    job = TonyJob(backend_local.submit(spec, make_bundle("import time\ntime.sleep(5)", {})))
    deadline = time.monotonic() + 30
    while job.client.snapshot().state != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2)  # heartbeats and log shipping are running
    am = psutil.Process(job.client.am_pid())
    executors = am.children()
    result = {
        "am_rss_mib": round(am.memory_info().rss / 2**20, 1),
        "idle_executor_rss_mib": round(executors[0].memory_info().rss / 2**20, 1),
    }
    job.kill()
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--before", default=None, help="also tony-jupyter at this git revision")


def run(ctx: Context) -> dict:
    runs = ctx.runs or (2 if ctx.quick else 5)  # --quick: 2 runs, a smoke test of the bench
    workers = ctx.args.workers
    rev = None if ctx.quick else ctx.args.before
    before_lib.compile_tree()
    old = before_lib.tree(rev) if rev else None
    tony, hand, prior = [], [], []
    run_tony(workers)  # warm the page cache for both sides
    if old is not None:
        before_lib.call(old, "bench.startup:run_tony", workers)
    for _ in range(runs):
        tony.append(run_tony(workers))
        hand.append(run_by_hand(workers))
        if old is not None:
            prior.append(before_lib.call(old, "bench.startup:run_tony", workers))
    figures = {
        "tony_jupyter_local_median": round(statistics.median(tony), 4),
        "by_hand_median": round(statistics.median(hand), 4),
        "ratio": round(statistics.median(tony) / statistics.median(hand), 2),
        "tony_jupyter_local_all": [round(x, 4) for x in tony],
        "by_hand_all": [round(x, 4) for x in hand],
    }
    if prior:
        figures.update(
            before_rev=rev,
            before_median=round(statistics.median(prior), 4),
            before_all=[round(x, 4) for x in prior],
            now_vs_before=round(statistics.median(tony) / statistics.median(prior), 2),
        )
    return {
        "workers": workers,
        "runs": runs,
        "cell_to_all_tasks_in_user_code_s": figures,
        "footprint": footprint(),
    }
