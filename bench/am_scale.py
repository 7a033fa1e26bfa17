"""Part 5: the AM (Coordinator + HTTP API, with a provider that launches nothing) under N
simulated executors: real HTTP clients in other processes that register, long-poll the cluster
spec and heartbeat at the default period, by ``POST executor/heartbeat`` (``http``, the old
way) and on the AM's heartbeat stream (``stream``, am/beats.py, what executors do now), the two
A B at each N in the same run. The AM runs on its own core, the simulators on the others
(``taskset``) where the machine has two. AM CPU per heartbeat, RSS (and per task), latency
p50/p99; N grows until p99 > 1 s or requests fail: where it breaks."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests

from bench.lib import am_host
from bench.lib import before as before_lib
from bench.lib.common import REPO, Context, log, pct
from bench.lib.fake_provider import LAUNCHES
from tony_jupyter.options import parse_job_args

NAME = "am_scale"
ABOUT = "the real AM under N simulated executors: CPU, RSS, heartbeat p50/p99, where it breaks"
BREAK_P99_S = 1.0


def _cores() -> tuple[list[str], list[str]]:
    """``taskset`` prefixes: the AM alone on one core, the simulators on the rest."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return [], []
    rest = ",".join(map(str, cpus[1:]))
    return ["taskset", "-c", str(cpus[0])], ["taskset", "-c", rest]


def _start_am(n: int) -> tuple[subprocess.Popen, dict, Path]:
    d = Path(tempfile.mkdtemp(prefix="tony-bench-am-"))
    # Missed heartbeats: 30, not 8, so that a job survives its executors' ramp-up on a shared
    # 2-core box (1,000 registrations while others' tests hold the cores took > 8 s); what is
    # measured is the AM's cost per heartbeat and their latency, once all run.
    conf = "--conf tony.am.linger-sec=5 --conf tony.task.max-missed-heartbeats=30"
    _, spec = parse_job_args(f"--workers {n} --no-tensorboard {conf}")
    am, info = am_host.launch(d, spec, _cores()[0])
    return am, info, d


def level(n: int, steady_s: float, mode: str = "stream", period_ms: int = 1000) -> dict:
    am, info, d = _start_am(n)
    token = (d / "token").read_text()
    auth = {"Authorization": f"Bearer {token}"}
    # One simulator process on its own core drives every executor (sim_executors.py).
    # The simulator's longest run: every executor registers first (the bench tells it to
    # stop once it has measured, ``.stop`` beside its output).
    seconds = steady_s + (15 if n > 100 else 4) + n / 50
    out = d / "sim-0.json"
    cmd = [
        *_cores()[1],
        sys.executable,
        "-m",
        "bench.lib.sim_executors",
        info["url"],
        str(d / LAUNCHES),
        "0",
        str(n),
        str(seconds),
        str(out),
        mode,
    ]
    env = dict(os.environ, TONY_HEARTBEAT_MS=str(period_ms))
    sim_started = time.time()
    sim = subprocess.Popen(cmd, cwd=REPO, env=env)
    proc = psutil.Process(am.pid)
    t_start = time.monotonic()
    try:
        # The job's events, not its snapshot: a snapshot of 10,000 tasks is itself work for
        # the AM (measured apart: ``snapshot_s``).
        state, since = "", 0
        while state != "RUNNING" and time.monotonic() - t_start < seconds:
            got = requests.get(
                f"{info['url']}/api/v1/events",
                params={"since": since, "timeout": 5},
                headers=auth,
                timeout=60,
            ).json()
            since = got["next"]
            for e in got["events"]:
                if e["kind"] == "job":
                    state = e["state"]
        # Heartbeats settle into their period, after the cluster spec's fan-out (~17 s of
        # 10,000 answers of ~200 KB at 10,000 executors).
        time.sleep(min(3.0, steady_s / 3) + n / 500)
        sim_proc = psutil.Process(sim.pid)
        sim0 = sim_proc.cpu_times()
        cpu0, t0, wall0 = proc.cpu_times(), time.monotonic(), time.time()
        rss, fds = [], []
        while time.monotonic() - t0 < steady_s:
            rss.append(proc.memory_info().rss)
            fds.append(proc.num_fds())
            time.sleep(0.5)
        cpu1, t1, wall1 = proc.cpu_times(), time.monotonic(), time.time()
        sim1 = sim_proc.cpu_times()
        t = time.monotonic()  # one watcher's look at the whole job, after the window
        requests.get(f"{info['url']}/api/v1/job", headers=auth, timeout=60).json()
        snapshot_s = time.monotonic() - t
        Path(f"{out}.stop").touch()
        sim.wait(seconds + 120)
        snap = requests.get(f"{info['url']}/api/v1/job", headers=auth, timeout=30).json()
    finally:
        if sim.poll() is None:
            sim.kill()
        try:
            requests.post(f"{info['url']}/api/v1/kill", headers=auth, json={}, timeout=30)
            requests.post(f"{info['url']}/api/v1/release", headers=auth, timeout=30)
            am.wait(30)
        except (requests.RequestException, subprocess.TimeoutExpired):
            am.kill()
            am.wait()
    got = json.loads(out.read_text()) if out.exists() else {}
    beats, beat_at = got.get("heartbeat", []), got.get("beat_at", [])
    cpu_s = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    # The heartbeats answered while the AM's CPU was measured: the AM's cost per heartbeat,
    # and their latencies (the steady state; the ramp-up's are in the all-beats figures).
    steady = [b for b, at in zip(beats, beat_at, strict=True) if wall0 <= at <= wall1]
    beats_per_s = len(steady) / (t1 - t0)
    spec_at = got.get("spec_at", [])
    return {
        "executors": n,
        "heartbeats_by": mode,
        "beat_period_ms": period_ms,
        "am_pinned": bool(_cores()[0]),
        "client_processes": 1,
        # From the simulator's start to the last executor holding the cluster spec.
        "all_registered_s": round(max(spec_at) - sim_started, 2) if len(spec_at) == n else None,
        "executors_with_spec": len(spec_at),
        "job_state_after": snap["state"],
        "job_reason_after": snap.get("reason", "")[:300],
        "am_cpu_percent": round(100 * cpu_s / (t1 - t0), 1),
        # The simulator's core: near 100 % it, not the AM, adds latency (an answer waits in its
        # socket until the simulator's loop reads it).
        "sim_cpu_percent": round(
            100 * ((sim1.user + sim1.system) - (sim0.user + sim0.system)) / (t1 - t0), 1
        ),
        "am_rss_mib": round(max(rss) / 2**20, 1),
        "am_fds": max(fds),
        "heartbeats": len(beats),
        "heartbeats_per_s": round(beats_per_s, 1),
        # CPU the AM spent per heartbeat it served: what one AM core sustains, whatever the
        # machine's load (a starved AM shows a low CPU % and a high latency).
        "am_cpu_ms_per_heartbeat": round(1000 * cpu_s / max(1, len(steady)), 4),
        "executors_per_am_core_at_1s": round(len(steady) / max(cpu_s, 1e-6)),
        "heartbeat_p50_s": pct(steady, 50),
        "heartbeat_p99_s": pct(steady, 99),
        "heartbeat_max_s": round(max(steady), 4) if steady else None,
        "heartbeat_p99_all_s": pct(beats, 99),  # ramp-up included
        "snapshot_s": round(snapshot_s, 3),  # GET job, round trip, once
        "register_p99_s": pct(got.get("register", []), 99),
        "sim_late_max_s": round(got.get("late_max_s", 0.0), 4),
        "sim_stalest": got.get("stalest", []),
        "errors": len(got.get("errors", [])),
        "first_errors": got.get("errors", [])[:5],
    }


def _failed(n: int, e: Exception, mode: str = "before") -> dict:
    """A level the bench could not finish (the AM stopped answering): broken, and why."""
    why = f"{type(e).__name__}: {e}"[-600:]
    return {
        "executors": n,
        "heartbeats_by": mode,
        "heartbeat_p99_s": None,
        "errors": 1,
        "job_state_after": "BENCH FAILED",
        "first_errors": [why],
    }


def _broken(row: dict) -> bool:
    p99 = row["heartbeat_p99_s"]
    return (
        bool(row["errors"])
        or p99 is None
        or p99 > BREAK_P99_S
        or row["job_state_after"] != "RUNNING"
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--levels", default="100,1000,2000,4000,10000", help="numbers of executors")
    p.add_argument("--steady", type=float, default=20.0, help="seconds measured at each level")
    p.add_argument("--modes", default="http,stream", help="heartbeat transports, A B per level")
    p.add_argument(
        "--before",
        default=None,
        help="also the AM at this git revision (bench/lib/before.py), same simulator, each "
        "level A B on the stream",
    )
    p.add_argument(
        "--period-ms",
        type=int,
        default=1000,
        help="the simulators' heartbeat period: e.g. 200 ms from 200 executors is the heartbeat "
        "rate of 1,000 at 1 s without 1,000 registrations on a small box",
    )


def run(ctx: Context) -> dict:
    quick = ctx.quick
    args = ctx.args
    levels = (50,) if quick else tuple(int(x) for x in args.levels.split(","))
    steady = 6.0 if quick else args.steady
    modes = args.modes.split(",")
    rows = []
    broken: set[str] = set()
    rev = None if quick else args.before
    old = before_lib.tree(rev) if rev else None
    load = os.getloadavg()[0]
    for n in levels:
        if old is not None and "before" not in broken:  # the AM at REV, A B with this one's
            log(f"am_scale: {n} simulated executors, the AM at {rev}")
            try:
                row = before_lib.call(
                    old, "bench.am_scale:level", n, steady, "stream", args.period_ms, timeout=900
                )
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                row = _failed(n, e)
            row.update(heartbeats_by="before", before_rev=rev)
            row["load_before_after"] = [load, os.getloadavg()[0]]
            load = os.getloadavg()[0]
            rows.append(row)
            if n >= 1000 and _broken(row):
                broken.add("before")
        for mode in modes:
            if mode in broken:
                continue
            log(f"am_scale: {n} simulated executors, heartbeats by {mode}, {args.period_ms} ms")
            try:
                row = level(n, steady, mode, args.period_ms)
            except (OSError, RuntimeError, ValueError, requests.RequestException) as e:
                row = _failed(n, e, mode)
            row["load_before_after"] = [load, os.getloadavg()[0]]
            load = os.getloadavg()[0]
            log(
                f"  cpu {row['am_cpu_percent']}%, {row['am_cpu_ms_per_heartbeat']} ms/beat, "
                f"rss {row['am_rss_mib']} MiB, p99 {row['heartbeat_p99_s']} s, "
                f"errors {row['errors']}, {row['job_state_after']}"
            )
            rows.append(row)
            # 1,000 is the figure asked for: always measured; beyond it, stop at the first break.
            if n >= 1000 and _broken(row):
                broken.add(mode)
    for mode in [*modes, "before"]:
        mine = [r for r in rows if r["heartbeats_by"] == mode and "am_rss_mib" in r]
        if len(mine) >= 2:  # the AM's memory per task: the slope between the end levels
            lo, hi = mine[0], mine[-1]
            per = (hi["am_rss_mib"] - lo["am_rss_mib"]) * 1024 / (hi["executors"] - lo["executors"])
            for r in mine:
                r["am_rss_kib_per_task"] = round(per, 1)
    return {
        "levels": rows,
        "steady_s": steady,
        "breaks_at_executors": {
            m: next((r["executors"] for r in rows if r["heartbeats_by"] == m and _broken(r)), None)
            for m in [*modes, "before"]
        },
        "break_rule": f"heartbeat p99 > {BREAK_P99_S} s, any error, or the job failed",
    }
