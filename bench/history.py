"""Part: the job history. How many bytes one job's history entry takes (a real local job:
2 workers reporting loss for ``steps`` steps, with its logs, events and metric samples), and
how long the job list takes to load with 1,000 jobs in the history: ``%tony list``'s
``all_jobs`` and the server extension's ``GET /tony/api/jobs`` (``ServerJobs.summaries``, what
the side panel loads), medians of several loads. The 1,000 entries are copies of the real one
under new ids. Local only (the HDFS side lists one LISTSTATUS and caches each entry's summary
after its first read, launcher/yarn/hdfsjobs.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.lib.common import Context, log, median
from tony_jupyter.am import historyrecord as am_history
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.job import submit as submit_job
from tony_jupyter.options import parse_job_args

NAME = "history"
ABOUT = "history bytes per job (a real local job); job list load time with 1,000 jobs"
CELL = """
import time, tony_jupyter
for step in range(1, {steps} + 1):
    tony_jupyter.report(step=step, loss=1.0 / step, accuracy=step / {steps}, total_steps={steps})
    if step % 10 == 0:
        print("step", step, flush=True)
    time.sleep({pause})
"""


def _bytes(paths) -> int:
    total = 0
    for p in paths:
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        elif p.exists():
            total += p.stat().st_size
    return total


def _one_job(steps: int, pause: float) -> Path:
    _, spec = parse_job_args("--workers 2 --name bench-history --no-tensorboard")
    record = submit_job(spec, make_bundle(CELL.format(steps=steps, pause=pause), {}))
    job = TonyJob(record)
    snap = job.wait(timeout=300)
    job.client.release()
    job.client.wait_am_exit()
    assert str(snap.state) == "SUCCEEDED", snap.reason
    return record.dir


def _fill(home: Path, src: Path, n: int) -> None:
    jobs = home / "jobs"
    for i in range(n):
        job_id = f"tony_20250101_000000_{i:06x}"
        d = jobs / job_id
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("names.pkl", "src"))
        for name in ("status.json", "history.json"):
            path = d / name
            path.write_text(path.read_text().replace(src.name, job_id))


def _time(fn, runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times), times


def run(ctx: Context) -> dict:
    from tony_jupyter.launcher.joblist import all_jobs
    from tony_jupyter.server_ext.jobs import ServerJobs

    steps, pause = (30, 0.05) if ctx.quick else (300, 0.02)
    n_jobs = 200 if ctx.quick else 1000
    runs = ctx.runs or (1 if ctx.quick else 5)
    saved = {k: os.environ.get(k) for k in ("TONY_JUPYTER_HOME", "HADOOP_CONF_DIR")}
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        home = Path(tmp) / "home"
        os.environ["TONY_JUPYTER_HOME"] = str(home)
        os.environ.pop("HADOOP_CONF_DIR", None)  # the local history only
        try:
            log(f"history: one real job, {steps} steps")
            src = _one_job(steps, pause)
            entry = [src / f for f in am_history.FILES] + [src / "logs"]
            per_file = {p.name: _bytes([p]) for p in entry if p.exists()}
            entry_bytes = _bytes(entry)
            whole_dir = _bytes([src])
            log(f"history: {n_jobs} entries")
            _fill(home, src, n_jobs)
            list_s, list_rounds = _time(lambda: all_jobs(home, remote=False), runs)
            server = ServerJobs(jobs_home=str(home))
            api_s, api_rounds = _time(lambda: asyncio.run(server.summaries()), runs)
            rows = len(asyncio.run(server.summaries()))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return {
        "steps_reported": steps,
        "history_bytes_per_job": entry_bytes,
        "history_bytes_by_file": per_file,
        "job_dir_bytes": whole_dir,
        "jobs_in_history": n_jobs,
        "jobs_listed": rows,
        "list_load_s": round(list_s, 4),
        "server_api_jobs_load_s": round(api_s, 4),
        "rounds": {"list_load_s": list_rounds, "server_api_jobs_load_s": api_rounds},
    }
