"""Part 1: cell -> every task running user code, and -> first training step done; local backend
and YARN devcluster; 1, 2, 4 workers; beside processes started by hand with TF_CONFIG and (on
YARN) TonY itself (0.4.7, its Java client and AM: bench/lib/tony_peer.py) and Hadoop's
distributed-shell AM, the floor of a YARN AM."""

from __future__ import annotations

from bench.lib import runners
from bench.lib.common import Context, column, interleave, log, median, ratio

NAME = "time_to_training"
ABOUT = "cell -> user code, first step, job end; 1/2/4 workers; every side vs by hand"


def _sides(workers: int, conf: dict, cluster) -> dict:
    sides = {
        "hand": lambda: runners.by_hand(workers, conf),
        "tony_local": lambda: runners.tony("local", workers, conf),
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


def run(ctx: Context) -> dict:
    quick, cluster, runs = ctx.quick, ctx.cluster, ctx.runs
    sizes = getattr(ctx.args, "sizes", "1,2,4")
    counts = (1,) if quick else tuple(int(n) for n in sizes.split(","))
    only = {s for s in getattr(ctx.args, "sides", "").split(",") if s}
    runs = runs or (1 if quick else 3)
    conf = {"steps": 20}
    result: dict = {"runs": runs, "steps": conf["steps"], "workers": {}}
    for n in counts:
        log(f"time_to_training: {n} worker(s), {runs} round(s)")
        sides = _sides(n, conf, None if quick else cluster)
        if only:
            sides = {k: v for k, v in sides.items() if k in only or k == "hand"}
        rows = interleave(runs, sides, log)
        keys = ("to_user_code_s", "to_first_step_s", "to_job_end_s", "to_submitted_s")
        med = {side: {k: median(column(got, k)) for k in keys} for side, got in rows.items()}
        for side in med:
            med[side]["errors"] = sum("error" in r for r in rows[side])
        ratios = {}
        for side in ("tony_local", "tony_yarn", "tony_yarn_warm", "tony", "dshell_yarn"):
            if side in med:
                for k in ("to_user_code_s", "to_first_step_s"):
                    ratios[f"{side}/hand {k}"] = ratio(med[side][k], med["hand"][k])
        for ours in ("tony_yarn", "tony_yarn_warm"):
            if ours not in med:
                continue
            for other in ("tony", "dshell_yarn"):
                for k in ("to_user_code_s", "to_first_step_s", "to_job_end_s"):
                    ratios[f"{ours}/{other} {k}"] = ratio(med[ours][k], med[other][k])
        result["workers"][str(n)] = {"median": med, "ratios": ratios, "all": rows}
    return result
