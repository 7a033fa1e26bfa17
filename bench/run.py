"""Run the benchmark suite: ``python -m bench [--quick] [--only NAME[,NAME]] [--runs N]``.

Each part writes ``bench/results/<part>.json`` (with the machine described) and a PNG plot
(``bench/results/quick/`` with --quick, untracked);
a full run (not --quick, every part) also rewrites the table in bench/README.md. Parts that
need YARN use a devcluster already running (default dir); without one they are skipped, never
started here. Exits non-zero only when the bench itself breaks, never on a missed goal.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback

from bench import (
    am_scale,
    data,
    faults,
    footprint,
    overhead,
    staging,
    streaming,
    time_to_training,
)
from bench.common import BENCH, devcluster, log, machine, use_devcluster_env, write_result

PARTS = {
    m.NAME: m
    for m in (time_to_training, overhead, streaming, staging, am_scale, footprint, faults, data)
}
ALL = ("startup", *PARTS)


def _startup(quick: bool) -> dict:
    """The original cell-to-user-code bench, unchanged: it writes results/startup.json."""
    cmd = [sys.executable, str(BENCH / "startup.py"), *(["--quick"] if quick else [])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return {"written_by": "bench/startup.py"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small counts, one round, local only")
    p.add_argument("--only", default="", help=f"comma-separated parts: {', '.join(ALL)}")
    p.add_argument("--runs", type=int, default=None, help="rounds per comparison")
    p.add_argument("--no-yarn", action="store_true", help="skip the devcluster even if it runs")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(ALL)
    unknown = [n for n in names if n not in ALL]
    if unknown:
        p.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(ALL)}")
    os.environ.setdefault("TONY_JUPYTER_HOME", tempfile.mkdtemp(prefix="tony-bench-home-"))
    cluster = None if (args.quick or args.no_yarn) else devcluster()
    if cluster is not None:
        use_devcluster_env(cluster)
    log(f"bench: parts {', '.join(names)}; devcluster: {cluster.dir if cluster else 'none'}")
    desc = machine()
    desc["devcluster"] = (
        {"hadoop": cluster.env().get("TONY_DEVCLUSTER_HADOOP_VERSION"), "rm": cluster.rm_url}
        if cluster
        else None
    )
    broken = []
    for name in names:
        began = time.time()
        try:
            if name == "startup":
                if not args.quick:  # its --quick would overwrite results/startup.json
                    _startup(args.quick)
                continue
            data = PARTS[name].run(args.quick, cluster, args.runs)
        except Exception:  # noqa: BLE001 - the bench itself broke: report, go on, exit 1
            traceback.print_exc()
            broken.append(name)
            continue
        data = {
            "bench": name,
            "quick": args.quick,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began)),
            "seconds": round(time.time() - began, 1),
            "machine": dict(desc, load_avg_at_end=[round(x, 2) for x in os.getloadavg()]),
            **data,
        }
        log(f"bench: {name} -> {write_result(name, data)} ({data['seconds']} s)")
        try:
            from bench import plots

            plots.draw(name, data)
        except ImportError as e:
            log(f"bench: no plot for {name} ({e}); pip install matplotlib")
    if not args.quick and not args.only:
        from bench import table

        table.update_readme()
    if broken:
        log(f"bench: broken parts: {', '.join(broken)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
