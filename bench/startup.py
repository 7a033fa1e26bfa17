"""Time from running a cell to every task running user code: tony-jupyter's local backend, a
kernel's first job (no spare processes: ``TONY_JUPYTER_WARM=0``) and a later one (the kernel's
spare AM and its spare executors, core/warmproc.py, settled), vs the same processes started
by hand with TF_CONFIG (A B A B ..., medians); with ``--before REV`` also tony-jupyter as it was
at that git revision (bench/lib/before.py), in the same rounds. Also where the time goes, phase
by phase (bench/lib/startup_trace.py), and the resident memory of the AM, of an idle executor
and of the idle spares (``footprint()``, which the footprint part uses too).

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
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.options import parse_job_args

NAME = "startup"
GOAL_S = 0.15  # issue 18
ABOUT = "the original: cell -> user code, trivial cell, local (first and warm job), vs by hand; RSS"

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


def run_first_job(workers: int) -> float:
    """As a kernel's first job: no spare AM to hand it to (and none started after it)."""
    from tony_jupyter.launcher import localwarm as spare_am  # not in a --before tree's package

    spare_am.discard()
    os.environ["TONY_JUPYTER_WARM"] = "0"
    try:
        return run_tony(workers)
    finally:
        del os.environ["TONY_JUPYTER_WARM"]


def run_warm(workers: int) -> float:
    """A later job: the spare the last one left started and idle; then the next one is too,
    so that it does not run beside the next side's measurement."""
    from bench.lib.startup_trace import settle_spare

    settle_spare(workers)
    took = run_tony(workers)
    settle_spare(workers)
    return took


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
    from bench.lib.startup_trace import settle_spare
    from tony_jupyter.launcher import localwarm as spare_am

    spare = spare_am.current()
    if spare is not None:  # what keeping the next job warm costs while nothing runs
        settle_spare(1)
        try:
            spare_proc = psutil.Process(spare.proc.pid)
            result["idle_spare_am_rss_mib"] = round(spare_proc.memory_info().rss / 2**20, 1)
            result["idle_spare_executor_rss_mib"] = [
                round(p.memory_info().rss / 2**20, 1) for p in spare_proc.children()
            ]
        except psutil.Error:
            pass
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--before", default=None, help="also tony-jupyter at this git revision")


def run(ctx: Context) -> dict:
    from bench.lib.startup_trace import trace

    runs = ctx.runs or (2 if ctx.quick else 5)  # --quick: 2 runs, a smoke test of the bench
    workers = ctx.args.workers
    rev = None if ctx.quick else ctx.args.before
    before_lib.compile_tree()
    old = before_lib.tree(rev) if rev else None
    first, warm, hand, prior = [], [], [], []
    run_first_job(workers)  # warm the page cache for every side
    run_warm(workers)
    if old is not None:
        before_lib.call(old, "bench.startup:run_tony", workers)
    for _ in range(runs):
        first.append(run_first_job(workers))
        hand.append(run_by_hand(workers))
        if old is not None:
            prior.append(before_lib.call(old, "bench.startup:run_tony", workers))
        warm.append(run_warm(workers))
    med = statistics.median
    figures = {
        "tony_jupyter_local_warm_median": round(med(warm), 4),
        "tony_jupyter_local_first_job_median": round(med(first), 4),
        "by_hand_median": round(med(hand), 4),
        "goal_s": GOAL_S,
        "warm_vs_goal": round(med(warm) / GOAL_S, 2),
        "warm_vs_by_hand": round(med(warm) / med(hand), 2),
        "first_job_vs_by_hand": round(med(first) / med(hand), 2),
        "tony_jupyter_local_warm_all": [round(x, 4) for x in warm],
        "tony_jupyter_local_first_job_all": [round(x, 4) for x in first],
        "by_hand_all": [round(x, 4) for x in hand],
    }
    if prior:
        figures.update(
            before_rev=rev,
            before_median=round(med(prior), 4),
            before_all=[round(x, 4) for x in prior],
            warm_vs_before=round(med(warm) / med(prior), 2),
            first_job_vs_before=round(med(first) / med(prior), 2),
        )
    return {
        "workers": workers,
        "runs": runs,
        "cell_to_all_tasks_in_user_code_s": figures,
        "phases_ms": trace(workers, CELL, 3 if ctx.quick else runs),
        "footprint": footprint(),
    }
