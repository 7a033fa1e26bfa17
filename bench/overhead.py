"""Part 2: steps/s of the same training under tony-jupyter (local backend, with and without its
TensorBoard; YARN and TonY 0.4.7 when a devcluster runs) vs the same processes started by hand.
Goal: ratio >= 0.98. Local sides also record the CPU seconds each kind of process took
(bench/lib/cpu_roles.py): on 2 cores, whatever runs beside the 2 workers takes CPU from them."""

from __future__ import annotations

from bench.lib import runners
from bench.lib.common import Context, column, interleave, log, median, ratio
from bench.lib.cpu_roles import CpuByRole

NAME = "overhead"
ABOUT = "steps/s of one training, tony-jupyter (local, no TensorBoard, YARN) and TonY vs by hand"
GOAL = 0.98


def run(ctx: Context) -> dict:
    quick, cluster, runs = ctx.quick, ctx.cluster, ctx.runs
    workers = 1 if quick else 2
    runs = runs or (1 if quick else 3)
    conf = {"steps": 100 if quick else 1500}
    sides = {
        "hand": lambda: _with_cpu(lambda: runners.by_hand(workers, conf)),
        "tony_local": lambda: _with_cpu(lambda: runners.tony("local", workers, conf)),
    }
    if not quick:
        sides["tony_local_no_tb"] = lambda: _with_cpu(
            lambda: runners.tony("local", workers, conf, "--no-tensorboard")
        )
    if cluster is not None and not quick:
        sides["tony_yarn"] = lambda: runners.tony("yarn", workers, conf)
        sides["tony"] = lambda: runners.tony_peer(cluster, workers, conf)
    log(f"overhead: {workers} worker(s), {conf['steps']} steps, {runs} round(s)")
    rows = interleave(runs, sides, log)
    med = {side: median(column(got, "steps_per_s")) for side, got in rows.items()}
    # Ratio of the medians, and the median of per-round ratios (robust to drift across rounds).
    per_round = {
        side: median(
            [
                a["steps_per_s"] / b["steps_per_s"]
                for a, b in zip(rows[side], rows["hand"], strict=True)
                if "steps_per_s" in a and "steps_per_s" in b
            ]
        )
        for side in sides
        if side != "hand"
    }
    cpu = {
        side: {
            role: median([r["cpu_s"].get(role, 0.0) for r in got if "cpu_s" in r])
            for role in sorted({k for r in got for k in r.get("cpu_s", {})})
        }
        for side, got in rows.items()
    }
    return {
        "workers": workers,
        "cpu_s_by_role_median": {s: c for s, c in cpu.items() if c},
        "steps": conf["steps"],
        "runs": runs,
        "goal_ratio": GOAL,
        "steps_per_s_median": med,
        "ratio_vs_hand": {s: ratio(med[s], med["hand"]) for s in med if s != "hand"},
        "ratio_vs_hand_per_round_median": per_round,
        "all": rows,
    }


def _with_cpu(fn) -> dict:
    with CpuByRole() as cpu:
        row = fn()
    return {**row, "cpu_s": cpu.seconds()}
