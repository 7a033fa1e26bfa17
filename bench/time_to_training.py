"""Part 1: cell -> every task running user code, and -> first training step done; local backend
(a kernel's first job, in the spares started as the extension loaded; a later one, in spares that
imported TensorFlow; no spares) and YARN devcluster (cold; the warm AM); 1, 2, 4 workers; beside
processes started by hand with TF_CONFIG and (on YARN) TonY itself (0.4.7, its Java client and
AM: bench/lib/tony_peer.py) and Hadoop's distributed-shell AM, the floor of a YARN AM. Each
size notes the 1-minute load before and after its rounds."""

from __future__ import annotations

import os

from bench.lib import runners
from bench.lib.common import Context, column, interleave, log, median, ratio

NAME = "time_to_training"
ABOUT = "cell -> user code, first step, job end; 1/2/4 workers; every side vs by hand"


def _sides(workers: int, conf: dict, cluster) -> dict:
    sides = {
        "hand": lambda: runners.by_hand(workers, conf),
        "tony_local_cold": lambda: runners.tony_local_cold(workers, conf),
        "tony_local_first": lambda: runners.tony_local_first(workers, conf),
        "tony_local_warm": lambda: runners.tony_local_warm(workers, conf),
    }
    if cluster is not None:
        sides["tony_yarn"] = lambda: runners.tony("yarn", workers, conf)
        # a kernel's later job: handed to the warm AM (TONY_JUPYTER_WARM_YARN)
        sides["tony_yarn_warm"] = lambda: runners.tony_warm(cluster, workers, conf)
        sides["tony"] = lambda: runners.tony_peer(cluster, workers, conf)
        sides["dshell_yarn"] = lambda: runners.distributed_shell(cluster, workers, conf)
    return sides


def add_arguments(p) -> None:
    p.add_argument("--sizes", default="1,2,4", help="numbers of workers (default 1,2,4)")
    p.add_argument("--sides", default="", help="only these sides (comma-separated; hand always)")
    p.add_argument(
        "--steps", type=int, default=20, help="training steps (0: start-up only, no TensorFlow)"
    )


def run(ctx: Context) -> dict:
    quick, cluster, runs = ctx.quick, ctx.cluster, ctx.runs
    sizes = getattr(ctx.args, "sizes", "1,2,4")
    counts = (1,) if quick else tuple(int(n) for n in sizes.split(","))
    only = {s for s in getattr(ctx.args, "sides", "").split(",") if s}
    runs = runs or (1 if quick else 3)
    conf = {"steps": getattr(ctx.args, "steps", 20)}
    result: dict = {"runs": runs, "steps": conf["steps"], "workers": {}}
    for n in counts:
        log(f"time_to_training: {n} worker(s), {runs} round(s)")
        sides = _sides(n, conf, None if quick else cluster)
        if only:
            sides = {k: v for k, v in sides.items() if k in only or k == "hand"}
        load_before = round(os.getloadavg()[0], 1)
        rows = interleave(runs, sides, log)
        keys = (
            "to_user_code_s",
            "to_framework_s",
            "to_first_step_s",
            "to_job_end_s",
            "to_submitted_s",
        )
        med = {side: {k: median(column(got, k)) for k in keys} for side, got in rows.items()}
        for side in med:
            med[side]["errors"] = sum("error" in r for r in rows[side])
        ratios = {}
        ours = ("tony_local_cold", "tony_local_first", "tony_local_warm", "tony_yarn")
        for side in (*ours, "tony_yarn_warm", "tony", "dshell_yarn"):
            if side in med:
                for k in ("to_user_code_s", "to_first_step_s"):
                    ratios[f"{side}/hand {k}"] = ratio(med[side][k], med["hand"][k])
        for ours in ("tony_yarn", "tony_yarn_warm"):
            if ours not in med:
                continue
            for other in ("tony", "dshell_yarn"):
                if other not in med:
                    continue
                for k in ("to_user_code_s", "to_first_step_s", "to_job_end_s"):
                    ratios[f"{ours}/{other} {k}"] = ratio(med[ours][k], med[other][k])
        load = [load_before, round(os.getloadavg()[0], 1)]
        result["workers"][str(n)] = {
            "median": med,
            "ratios": ratios,
            "goals": _goals(med, ratios),
            "load": load,
            "all": rows,
        }
    return result


def _goals(med: dict, ratios: dict) -> dict:
    """Issue 31's goals: (the figure, the goal, met); None where a side did not run."""

    def goal(value, most: float):
        return None if value is None else {"value": value, "goal": most, "met": value <= most}

    first = med.get("tony_local_first", {}).get("to_user_code_s")
    return {
        "local warm / hand, first step": goal(
            ratios.get("tony_local_warm/hand to_first_step_s"), 0.4
        ),
        "YARN warm / hand, first step": goal(
            ratios.get("tony_yarn_warm/hand to_first_step_s"), 0.4
        ),
        "YARN warm / TonY, first step": goal(
            ratios.get("tony_yarn_warm/tony to_first_step_s"), 0.15
        ),
        "YARN cold / dshell, user code": goal(
            ratios.get("tony_yarn/dshell_yarn to_user_code_s"), 1.0
        ),
        "YARN cold / dshell, first step": goal(
            ratios.get("tony_yarn/dshell_yarn to_first_step_s"), 1.0
        ),
        "local first job, user code (s)": goal(first, 0.3),
    }
