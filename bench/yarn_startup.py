"""Cell -> every task running user code, on the YARN devcluster vs the local backend (medians),
with the YARN time split into staging, AM start, container allocation and executor start; the
AM container's resident memory (Python + its JVM) and the bytes staged. Needs a running
devcluster (skipped without one, and with --quick).

    .venv/bin/python -m bench yarn_startup [--runs 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import requests

from bench.lib.common import Context, am_rss
from tony_jupyter.am import timeline
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher.yarn import amstart
from tony_jupyter.launcher.yarn import backend as yarn_backend
from tony_jupyter.launcher.yarn import staging as yarn_staging
from tony_jupyter.options import parse_job_args

NAME = "yarn_startup"
ABOUT = "cell -> user code on YARN vs local, split: staging, AM start, allocation, executor"

# The first line of user code records when it ran; then the task stays a moment so the RM
# still lists its container when we ask.
CELL = (
    "import os, time\nopen(os.path.join(OUT, os.environ['TASK_INDEX']), 'w')"
    ".write(repr(time.time()))\ntime.sleep(2)\n"
)


def wait_for(out: Path, n: int, timeout: float = 120) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(out.iterdir())
        if len(files) == n:
            try:
                return max(float(f.read_text()) for f in files)
            except ValueError:
                pass
        time.sleep(0.005)
    raise TimeoutError(f"only {len(list(out.iterdir()))}/{n} tasks started")


def run_once(backend: str, workers: int, marks: dict) -> dict:
    out = Path(tempfile.mkdtemp())
    _, spec = parse_job_args(f"--workers {workers} --memory 512m --backend {backend}")
    bundle = make_bundle(CELL, {"OUT": str(out)})
    t0 = time.time()
    marks.clear()
    submit = backend_local.submit if backend == "local" else yarn_backend.submit
    record = submit(spec, bundle)
    t_am = time.time()
    job = TonyJob(record)
    t_user = wait_for(out, workers)
    row = {"total_s": t_user - t0}
    if backend == "yarn":
        info = json.loads((record.dir / "yarn.json").read_text())
        rm = info["rm_url"] + "/ws/v1/cluster/apps/" + record.id
        containers = requests.get(
            f"{rm}/appattempts/appattempt_{record.id[len('application_') :]}_000001/containers",
            timeout=10,
        ).json()["container"]
        task_alloc = max(c["startedTime"] for c in containers[1:] if c) / 1000
        app = requests.get(rm, timeout=10).json()["app"]
        events = job.client.events(0)[0]
        launched = min(e.time for e in events if e.data.get("state") == "LAUNCHED")
        row.update(
            staging_s=marks["staged"] - t0,
            am_start_s=t_am - marks["staged"],
            container_allocation_s=task_alloc - launched,
            executor_start_s=t_user - task_alloc,
            bytes_staged=marks["bytes"],
            am_rss_mb=am_rss(record.id) / 2**20,
            am_timeline=am_timeline(app, t0, marks["staged"]),
        )
    job.wait(120)
    job.client.release()
    job.client.wait_am_exit(60)
    return row


def am_timeline(app: dict, t0: float, staged: float) -> dict:
    """Seconds after the submission's start: staging done, the RM's start of the application
    and launch of its AM container, then each step the AM's log marks (tony_jupyter/am/
    timeline.py), read from its NodeManager while the job runs."""
    steps = {"staged": staged, "rm_started": app["startedTime"] / 1000}
    if app.get("launchTime"):
        steps["am_container_launched"] = app["launchTime"] / 1000
    where = amstart.am_container(app)
    if where is not None:
        base, cid = where
        got = requests.get(f"{base}/ws/v1/node/containerlogs/{cid}/am.stderr", timeout=10)
        if got.status_code == 200:
            steps.update(timeline.parse(got.text))
    return {k: round(v - t0, 3) for k, v in sorted(steps.items(), key=lambda kv: kv[1])}


def instrument(marks: dict):
    """Record when staging ends and how many bytes it wrote, without changing the code path.
    Returns the original upload, to put back."""
    upload = yarn_staging.Staging.upload

    def timed(self, app_id, files, private=()):
        got = upload(self, app_id, files, private)
        marks["bytes"] = marks.get("bytes", 0) + sum(len(v) for v in files.values())
        marks["staged"] = time.time()
        return got

    yarn_staging.Staging.upload = timed  # type: ignore[method-assign]
    return upload


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2)


def run(ctx: Context) -> dict:
    if ctx.cluster is None:
        return {"skipped": "no devcluster running (`python -m tony_jupyter_devcluster up`)"}
    runs, workers = ctx.runs or 3, ctx.args.workers
    marks: dict = {}
    upload = instrument(marks)
    rows: dict[str, list[dict]] = {"local": [], "yarn": []}
    try:
        for _ in range(runs):
            for backend in ("local", "yarn"):
                rows[backend].append(run_once(backend, workers, marks))
    finally:
        yarn_staging.Staging.upload = upload  # type: ignore[method-assign]
    summary = {
        backend: {k: statistics.median(r[k] for r in got) for k in got[0] if k != "am_timeline"}
        for backend, got in rows.items()
    }
    timelines = [r["am_timeline"] for r in rows["yarn"]]
    steps = [k for k in timelines[0] if all(k in t for t in timelines)]
    summary["yarn"]["am_timeline"] = {k: statistics.median(t[k] for t in timelines) for k in steps}
    ab = upload_ab(max(runs, 8))
    return {"workers": workers, "runs": runs, "median": summary, "all": rows, "upload": ab}


def upload_ab(rounds: int) -> dict:
    """The job's five small files written into staging one after another (as before) and side by
    side (yarn_staging.UPLOAD_THREADS), A B per round, through the same WebHDFS client."""
    from tony_jupyter.launcher.yarn import secure

    _, spec = parse_job_args("--workers 2 --backend yarn")
    st = secure.connect(spec).staging
    files = {n: b"x" * 400 for n in ("spec.json", "token", "cell.py", "names.pkl", "bundle.json")}
    threads = yarn_staging.UPLOAD_THREADS
    got: dict[str, list[float]] = {"in_turn_s": [], "side_by_side_s": []}
    try:
        for r in range(rounds):
            for side, n in (("in_turn_s", 1), ("side_by_side_s", threads)):
                yarn_staging.UPLOAD_THREADS = n
                name = f"bench_upload_{r}_{n}"
                t = time.perf_counter()
                st.upload(name, files, private=("token",))
                got[side].append(time.perf_counter() - t)
                st.remove(name)
    finally:
        yarn_staging.UPLOAD_THREADS = threads
    med = {k: statistics.median(v) for k, v in got.items()}
    return {"median": med, "ratio": med["side_by_side_s"] / med["in_turn_s"], "all": got}
