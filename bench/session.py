"""Latency of a trivial cell in a warm session vs the same cell as a one-shot job
(A B A B ..., medians). Local backend; YARN too with --yarn (needs HADOOP_CONF_DIR, e.g. from
`tony-jupyter devcluster env`). Prints JSON; writes bench/results/session.json.

    .venv/bin/python bench/session.py [--runs 7] [--yarn]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from IPython.testing.globalipapp import start_ipython

CELL = "import os\nint(os.environ['TASK_INDEX'])"


def timed(ip, line: str) -> float:
    t = time.perf_counter()
    assert ip.run_cell_magic("tony", line, CELL) == 0
    return time.perf_counter() - t


def measure(ip, line: str, runs: int, interleave: bool = True) -> dict:
    """A B A B ... where the cluster holds both at once (the devcluster's 8-vcore default
    partition does: 3 + 3 vcores); with ``interleave=False`` the warm cells run first, then
    (session stopped) the one-shot jobs, for a cluster too small for both."""
    from tony_jupyter import session as sessions

    ip.run_line_magic("tony", f"session start {line}")
    warm_session = sessions.current()
    warm, oneshot = [], []
    try:
        for _ in range(runs):
            warm.append(timed(ip, ""))
            if interleave:
                sessions.set_current(None)  # the next cell is a one-shot job
                try:
                    oneshot.append(timed(ip, line))
                finally:
                    sessions.set_current(warm_session)
    finally:
        ip.run_line_magic("tony", "session stop")
    if not interleave:
        oneshot = [timed(ip, line) for _ in range(runs)]
    return {
        "interleaved": interleave,
        "warm_cell_median_s": round(statistics.median(warm), 3),
        "one_shot_job_median_s": round(statistics.median(oneshot), 3),
        "speedup": round(statistics.median(oneshot) / statistics.median(warm), 1),
        "warm_all_s": [round(x, 3) for x in warm],
        "one_shot_all_s": [round(x, 3) for x in oneshot],
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--yarn", action="store_true")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    runs = 2 if args.quick else args.runs
    os.environ.setdefault("TONY_JUPYTER_HOME", tempfile.mkdtemp(prefix="tony-bench-"))
    hadoop = os.environ.pop("HADOOP_CONF_DIR", None)
    ip = start_ipython()
    ip.run_line_magic("load_ext", "tony_jupyter")
    ip.display_formatter.active_types = ["text/plain"]
    result = {
        "bench": "session",
        "runs": runs,
        "cell": CELL,
        "local_2_workers": measure(ip, "--workers 2 --no-tensorboard", runs),
    }
    if args.yarn:
        if not hadoop:
            raise SystemExit("--yarn needs HADOOP_CONF_DIR (tony-jupyter devcluster env)")
        os.environ["HADOOP_CONF_DIR"] = hadoop
        result["yarn_2_workers"] = measure(ip, "--workers 2 --memory 512m --no-tensorboard", runs)
    text = json.dumps(result, indent=1)
    print(text)
    out = Path(__file__).parent / "results" / "session.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
