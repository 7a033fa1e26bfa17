"""A long job in flat memory: the real AM (Coordinator + HTTP API, bench/lib/am_host.py) under
many simulated executors beating fast with progress and metrics (bench/lib/sim_executors.py),
log lines shipped to it the way executors ship them, a kernel-side follower (the widget's
``follow``, bench/lib/soak_follower.py) and a Jupyter server with the extension whose jobs list
and job page are polled as the side panel does. Prints each process's RSS over time; the
figure that matters is the growth from the start (all tasks running) to the end.
``--quick``: 45 s, for CI."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import requests

from bench.lib import am_host
from bench.lib.common import REPO, Context, log
from bench.lib.fake_provider import LAUNCHES
from tony_jupyter.options import parse_job_args

NAME = "soak"
ABOUT = "AM, follower and server RSS over a long run at high step/metric/log/heartbeat rates"


def add_arguments(p) -> None:
    p.add_argument("--minutes", type=float, default=30.0, help="how long the job runs")
    p.add_argument("--tasks", type=int, default=50, help="simulated executors")
    p.add_argument("--beat-ms", type=int, default=200, help="each executor's heartbeat period")
    p.add_argument("--log-lines", type=int, default=200, help="log lines per second, in all")
    p.add_argument("--sample-s", type=float, default=30.0, help="RSS sampled this often")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_am(home: Path, tasks: int) -> tuple[subprocess.Popen, dict, Path]:
    d = home / "jobs" / f"tony_soak_{secrets.token_hex(3)}"
    d.mkdir(parents=True)
    # Missed heartbeats: an hour's worth, so that a shared machine starving the simulator for
    # a minute (it did, at load 35) does not end the job: memory over time is measured here.
    conf = "--conf tony.am.linger-sec=5 --conf tony.task.max-missed-heartbeats=3600"
    _, spec = parse_job_args(f"--workers {tasks} --no-tensorboard --name soak {conf}")
    am, info = am_host.launch(d, spec)
    return am, info, d


def _ship_logs(url: str, token: str, tasks: int, lines_per_s: int, stop: threading.Event):
    """Log batches as executors ship them (POST executor/logs), every 0.2 s, over the tasks."""
    s = requests.Session()
    n, k = 0, 0
    per_batch = max(1, lines_per_s // 5)
    while not stop.wait(0.2):
        task = f"worker:{k % tasks}"
        k += 1
        text = "".join(f"step {n + i}: loss=0.5 lr=0.001 {'x' * 60}\n" for i in range(per_batch))
        n += per_batch
        try:
            s.post(
                f"{url}/api/v1/executor/logs",
                json={"task": task, "attempt": 1, "text": text},
                headers={"Authorization": f"Bearer {token}"},  # the job's: any task's logs
                timeout=10,
            )
        except requests.RequestException:
            pass


def _start_server(home: Path, wait_s: float) -> tuple[subprocess.Popen | None, str, str]:
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, TONY_JUPYTER_HOME=str(home))
    env.pop("HADOOP_CONF_DIR", None)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={home}",
            *(["--allow-root"] if os.geteuid() == 0 else []),  # CI machines run as root
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s  # its extensions take a while on a loaded machine
    while time.monotonic() < deadline:
        try:
            requests.get(f"{base}/tony/api/jobs", params={"token": token}, timeout=5)
            return server, base, token
        except requests.RequestException:
            time.sleep(0.5)
    server.kill()
    return None, base, token


def _poll_panel(base: str, token: str, job_id: str, stop: threading.Event) -> None:
    """What the side panel does: the jobs list every 2 s, the job page's detail with it."""
    s = requests.Session()
    while not stop.wait(2.0):
        try:
            s.get(f"{base}/tony/api/jobs", params={"token": token}, timeout=30)
            s.get(f"{base}/tony/api/jobs/{job_id}/detail", params={"token": token}, timeout=30)
        except requests.RequestException:
            pass


def _rss_mib(p: psutil.Process | None) -> float | None:
    try:
        return round(p.memory_info().rss / 2**20, 1) if p is not None else None
    except psutil.Error:
        return None


def run(ctx: Context) -> dict:
    a = ctx.args
    minutes = 0.75 if ctx.quick else getattr(a, "minutes", 30.0)
    tasks = 20 if ctx.quick else getattr(a, "tasks", 100)
    beat_ms = getattr(a, "beat_ms", 200)
    log_lines = 200 if ctx.quick else getattr(a, "log_lines", 500)
    sample_s = 3.0 if ctx.quick else getattr(a, "sample_s", 30.0)
    seconds = minutes * 60
    home = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    am, info, d = _start_am(home, tasks)
    token = (d / "token").read_text()
    procs: list[subprocess.Popen] = [am]
    stop = threading.Event()
    out = d / "sim.json"
    try:
        sim = subprocess.Popen(
            [sys.executable, "-m", "bench.lib.sim_executors", info["url"], str(d / LAUNCHES), "0"]
            + [str(tasks), str(seconds + 60), str(out), "stream"],
            cwd=REPO,
            env=dict(os.environ, TONY_HEARTBEAT_MS=str(beat_ms)),
        )
        procs.append(sim)
        follower = subprocess.Popen(
            [sys.executable, "-m", "bench.lib.soak_follower", str(d)],
            cwd=REPO,
            env=dict(os.environ, TONY_JUPYTER_HOME=str(home)),
            stdout=subprocess.DEVNULL,
        )
        procs.append(follower)
        server, base, stoken = _start_server(home, 60 if ctx.quick else 120)
        if server is not None:
            procs.append(server)
        threads = [
            threading.Thread(
                target=_ship_logs, args=(info["url"], token, tasks, log_lines, stop), daemon=True
            )
        ]
        if server is not None:
            threads.append(
                threading.Thread(target=_poll_panel, args=(base, stoken, d.name, stop), daemon=True)
            )
        for t in threads:
            t.start()
        watched = {
            "am": psutil.Process(am.pid),
            "kernel_follower": psutil.Process(follower.pid),
            "jupyter_server": psutil.Process(server.pid) if server is not None else None,
        }
        samples = []
        t0 = time.monotonic()
        while (elapsed := time.monotonic() - t0) < seconds:
            samples.append(
                {"t_s": round(elapsed, 1), **{k: _rss_mib(p) for k, p in watched.items()}}
            )
            log(f"soak {elapsed:.0f}/{seconds:.0f} s: {samples[-1]}")
            time.sleep(min(sample_s, max(0.0, seconds - elapsed)))
        samples.append(
            {"t_s": round(time.monotonic() - t0, 1), **{k: _rss_mib(p) for k, p in watched.items()}}
        )
        auth = {"Authorization": f"Bearer {token}"}
        snap = requests.get(f"{info['url']}/api/v1/job", headers=auth, timeout=60).json()
        metrics = requests.get(f"{info['url']}/api/v1/metrics", headers=auth, timeout=60).json()
    finally:
        stop.set()
        Path(f"{out}.stop").touch()
        try:
            auth = {"Authorization": f"Bearer {token}"}
            requests.post(f"{info['url']}/api/v1/kill", headers=auth, json={}, timeout=30)
            requests.post(f"{info['url']}/api/v1/release", headers=auth, timeout=30)
        except requests.RequestException:
            pass
        for p in procs:
            try:
                p.wait(30 if p is am else 5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    # "start": the first sample once every task runs and has beaten for a while (10 % in)
    start = next((s for s in samples if s["t_s"] >= seconds * 0.1), samples[0])
    end = samples[-1]
    series = metrics.get("attempts", {}).get("1", {})
    result = {
        "rates": {
            "tasks": tasks,
            "heartbeat_ms": beat_ms,
            "heartbeats_per_s": round(tasks * 1000 / beat_ms),
            "metric_samples_per_s": round(tasks * 1000 / beat_ms),  # a step and loss per beat
            "log_lines_per_s": log_lines,
        },
        "minutes": minutes,
        "job_state_at_end": snap.get("state"),
        "metric_samples_held_per_task": max((len(v) for v in series.values()), default=0),
        "start": start,
        "end": end,
        "growth_mib": {
            k: round(end[k] - start[k], 1)
            for k in ("am", "kernel_follower", "jupyter_server")
            if end.get(k) is not None and start.get(k) is not None
        },
        "samples": samples,
    }
    shutil.rmtree(home, ignore_errors=True)
    return result
