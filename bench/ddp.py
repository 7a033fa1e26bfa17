"""PyTorch DDP under tony-jupyter vs the same script under ``torchrun --nproc_per_node 2`` on
this machine (bench/lib/ddp_workload.py, gloo, 2 ranks, threads pinned alike): launch → process
group up, → first step done, and steps/s (the slower rank's, after a warm-up), A B A B ...,
medians. t0 is the submission (tony-jupyter: what the magic does after parsing its line) or
torchrun's start. Local backend only. --quick skips it (each round imports torch in four
processes: half a minute on two shared cores).

    .venv/bin/python -m bench ddp [--runs 5] [--steps 300]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.lib.common import Context, column, free_port, interleave, log, median, ratio
from bench.lib.runners import TIMEOUT_S, _new_out, wait_tasks

NAME = "ddp"
ABOUT = "PyTorch DDP: tony-jupyter vs torchrun --nproc_per_node 2, to first step and steps/s"

WORKLOAD = Path(__file__).parent / "lib" / "ddp_workload.py"
RANKS = 2
KEYS = ("to_user_code_s", "to_process_group_s", "to_first_step_s", "steps_per_s")


def add_arguments(p) -> None:
    p.add_argument("--steps", type=int, default=300, help="training steps per run (default 300)")


def summarize(t0: float, ranks: list[dict]) -> dict:
    return {
        "to_user_code_s": max(r["t_start"] for r in ranks) - t0,
        "to_process_group_s": max(r["t_init"] for r in ranks) - t0,
        "to_first_step_s": max(r["t_first_step"] for r in ranks) - t0,
        # DDP steps in lockstep: the job's pace is its slower rank's
        "steps_per_s": min(r["steps_per_s"] for r in ranks),
        "omp_num_threads": sorted({str(r["omp_num_threads"]) for r in ranks}),
    }


def torchrun(conf: dict) -> dict:
    conf = _new_out(conf)
    out = Path(conf["out"])
    (out / "conf.json").write_text(json.dumps(conf))
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={RANKS}",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        str(WORKLOAD),
    ]
    env = dict(os.environ, BENCH_CONF=str(out / "conf.json"))
    t0 = time.time()
    with open(out / "torchrun.log", "wb") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)

    def alive() -> None:
        if proc.poll() not in (None, 0):
            raise RuntimeError(f"torchrun exited {proc.returncode}; see {out / 'torchrun.log'}")

    try:
        ranks = wait_tasks(out, RANKS, alive=alive)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shutil.rmtree(out)  # kept only when the side failed: its log is there
    return summarize(t0, ranks)


def tony(conf: dict) -> dict:
    from tony_jupyter.core.bundle import make_bundle
    from tony_jupyter.core.protocol import JobState
    from tony_jupyter.job import TonyJob, submit
    from tony_jupyter.options import parse_job_args

    conf = _new_out(conf)
    line = f"--framework pytorch --workers {RANKS} --backend local --memory 1g --no-tensorboard"
    _, spec = parse_job_args(line)
    bundle = make_bundle(WORKLOAD.read_text(), {"BENCH": conf}, extra=("BENCH",))
    t0 = time.time()
    job = TonyJob(submit(spec, bundle))
    try:
        snap = job.wait(TIMEOUT_S)
        if snap.state != JobState.SUCCEEDED:
            raise RuntimeError(f"{job.job_id} {snap.state}: {snap.reason[:500]}")
        ranks = wait_tasks(Path(conf["out"]), RANKS, timeout=10)
    finally:
        if job.state not in ("SUCCEEDED", "FAILED", "KILLED", "LOST"):
            job.kill()
        job.client.release()
        job.client.wait_am_exit(60)
    shutil.rmtree(conf["out"])
    return summarize(t0, ranks)


def run(ctx: Context) -> dict:
    if ctx.quick:
        return {"skipped": "--quick: run python -m bench ddp"}
    try:
        import torch  # noqa: F401
    except ImportError:
        return {"skipped": "torch is not installed (pip install 'tony-jupyter[frameworks]')"}
    runs = ctx.runs or 5
    conf = {"steps": getattr(ctx.args, "steps", 300), "threads": 1}
    hadoop = os.environ.pop("HADOOP_CONF_DIR", None)  # the local backend, whatever is running
    try:
        log(f"ddp: {RANKS} ranks, {conf['steps']} steps, {runs} round(s)")
        rows = interleave(
            runs, {"torchrun": lambda: torchrun(conf), "tony": lambda: tony(conf)}, log
        )
    finally:
        if hadoop is not None:
            os.environ["HADOOP_CONF_DIR"] = hadoop
    med = {side: {k: median(column(got, k)) for k in KEYS} for side, got in rows.items()}
    for side in med:
        med[side]["errors"] = sum("error" in r for r in rows[side])
    ratios = {f"tony/torchrun {k}": ratio(med["tony"][k], med["torchrun"][k]) for k in KEYS}
    return {"runs": runs, "ranks": RANKS, **conf, "median": med, "ratios": ratios, "all": rows}
