"""Part 6: resident memory of the AM (local; and YARN, where it holds a JVM through JPype) and
of an executor whose cell is idle, beside the user's process: a TensorFlow worker, started by
hand and under tony-jupyter (where the executor runs the cell in its own process)."""

from __future__ import annotations

import time

from bench import startup
from bench.lib import runners
from bench.lib.common import Context, am_rss, log, ratio
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.options import parse_job_args

NAME = "footprint"
ABOUT = "RSS of the AM (local, YARN) and an idle executor, beside a TensorFlow worker"


def _yarn_am_rss() -> float | None:
    from tony_jupyter.job import submit

    _, spec = parse_job_args("--workers 1 --memory 512m --backend yarn --no-tensorboard")
    job = TonyJob(submit(spec, make_bundle("import time\ntime.sleep(6)", {})))
    try:
        time.sleep(3)
        return round(am_rss(job.job_id) / 2**20, 1) or None
    finally:
        job.wait(120)
        job.client.release()
        job.client.wait_am_exit(60)


def run(ctx: Context) -> dict:
    quick, cluster = ctx.quick, ctx.cluster
    log("footprint: AM and idle executor; a TF worker by hand and under tony-jupyter")
    idle = startup.footprint()
    if quick:  # TensorFlow workers take most of a quick run's budget: AM and executor only
        return {
            "am_local_rss_mib": idle["am_rss_mib"],
            "executor_idle_rss_mib": idle["idle_executor_rss_mib"],
        }
    conf = {"steps": 50}
    hand = runners.by_hand(1, conf)["worker_max_rss_mib"]
    tony = runners.tony("local", 1, conf)["worker_max_rss_mib"]
    result = {
        "am_local_rss_mib": idle["am_rss_mib"],
        "executor_idle_rss_mib": idle["idle_executor_rss_mib"],
        "tf_worker_by_hand_max_rss_mib": round(hand, 1),
        "tf_worker_under_tony_max_rss_mib": round(tony, 1),
        "tony_worker_vs_hand": ratio(tony, hand),
        "am_plus_executor_vs_tf_worker": ratio(
            idle["am_rss_mib"] + idle["idle_executor_rss_mib"], hand
        ),
    }
    if cluster is not None and not quick:
        result["am_yarn_rss_mib"] = _yarn_am_rss()
    return result
