"""Where the time of one local submission goes (bench/startup.py): each phase's end, in ms after
the cell's submission, from the kernel's clock and the AM's (one machine: one clock), and for
a fresh AM its process's start (``psutil``'s create time, calibrated here; 10 ms ticks)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher import localwarm as spare_am
from tony_jupyter.options import parse_job_args


def _create_time_offset() -> float:
    """psutil's create times minus time.time(), for a process started now."""
    t = time.time()
    p = subprocess.Popen(["sleep", "0.05"])
    offset = psutil.Process(p.pid).create_time() - t
    p.wait()
    return offset


def settle_spare(workers: int, timeout: float = 30) -> None:
    """The kernel's spare AM started, its spare executors too, all idle (blocked on stdin)."""
    spare_am.start(workers)
    spare = spare_am.current()
    deadline = time.monotonic() + timeout
    idle_looks = 0
    while spare is not None and time.monotonic() < deadline and idle_looks < 3:
        try:
            am = psutil.Process(spare.proc.pid)
            family = [am, *am.children()]
            busy = len(family) < workers + 1 or any(
                p.status() != psutil.STATUS_SLEEPING or p.cpu_times().user == 0 for p in family
            )
        except psutil.Error:
            busy = True
        idle_looks = 0 if busy else idle_looks + 1
        time.sleep(0.05)


def one(workers: int, cell: str) -> dict[str, float]:
    out = Path(tempfile.mkdtemp())
    _, spec = parse_job_args(f"--workers {workers}")
    offset = _create_time_offset()
    spare = spare_am.current()
    t0 = time.time()
    bundle = make_bundle(cell, {"OUT": str(out)})
    backend_local.check_capacity(spec)
    record = backend_local.stage(spec, bundle)
    staged = time.time()
    backend_local.start_am(record)
    returned = time.time()
    backend_local.spare_am.replenish(workers)
    am_pid = int((record.dir / "am.pid").read_text())
    phases = {"staged": staged - t0}
    if spare is None or spare.proc.pid != am_pid:
        phases["am_process_started"] = psutil.Process(am_pid).create_time() - offset - t0
    info = json.loads((record.dir / "am.json").read_text())
    deadline = time.monotonic() + 60
    user: list[float] = []
    while len(user) < workers and time.monotonic() < deadline:
        try:
            user = [float(f.read_text()) for f in out.iterdir()]
        except ValueError:  # a file is being written
            user = []
        time.sleep(0.002)
    job = TonyJob(record)
    job.wait(60)
    tasks = job.client.snapshot().tasks
    phases.update(
        executors_launched=max(t.launched_at or 0 for t in tasks) - t0,
        am_serving=float(info["started"]) - t0,
        kernel_saw_am_serving=returned - t0,
        all_registered=max(t.registered_at or 0 for t in tasks) - t0,
        first_in_user_code=min(user) - t0,
        all_in_user_code=max(user) - t0,
    )
    job.client.release()
    job.client.wait_am_exit()
    return {k: round(v * 1000, 1) for k, v in phases.items()}


def trace(workers: int, cell: str, runs: int) -> dict[str, dict[str, float]]:
    """Median phase ends (ms) of a first job (no spare) and of a warm one (a settled spare)."""
    sides: dict[str, list[dict[str, float]]] = {"first_job": [], "warm": []}
    for _ in range(runs):
        spare_am.discard()
        os.environ["TONY_JUPYTER_WARM"] = "0"
        try:
            sides["first_job"].append(one(workers, cell))
        finally:
            del os.environ["TONY_JUPYTER_WARM"]
        settle_spare(workers)
        sides["warm"].append(one(workers, cell))
        settle_spare(workers)
    return {
        side: {k: round(statistics.median(r[k] for r in rows), 1) for k in rows[0]}
        for side, rows in sides.items()
    }
