"""Run the benchmark suite: ``python -m bench [PART [its flags]] [--quick] [--only NAME[,NAME]]
[--runs N] [--no-yarn]``; ``--list`` names the parts, ``--table`` prints the README's table.

Every part is one module ``bench/<part>.py`` with the same entry: ``NAME``, ``ABOUT`` (one
line), ``run(ctx: bench.lib.common.Context) -> dict`` and optionally ``add_arguments(parser)``
for flags of its own. This dispatcher is the only ``main``: for each part it builds the
``Context``, calls ``run``, adds what every result carries (the part's name, --quick, when,
seconds, the machine) and writes ``bench/results/<part>.json`` and a PNG plot
(``bench/results/quick/`` with --quick, untracked); a full run (not --quick, every part) also
rewrites the table in bench/README.md. Parts that need YARN use a devcluster already running
(default dir); without one they are skipped, never started here. Exits non-zero only when the
bench itself breaks, never on a missed goal.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from types import ModuleType

from bench.lib.common import (
    Context,
    devcluster,
    log,
    machine,
    use_devcluster_env,
    write_result,
)

# Every part, in the order a full run takes them.
PARTS = (
    "startup",
    "time_to_training",
    "overhead",
    "streaming",
    "staging",
    "localization",
    "am_scale",
    "footprint",
    "faults",
    "data",
    "session",
    "ddp",
    "yarn_startup",
    "secure_startup",
    "history",
    "panel",
    "soak",
)


def parts() -> dict[str, ModuleType]:
    found = {name: importlib.import_module(f"bench.{name}") for name in PARTS}
    for name, module in found.items():
        assert module.NAME == name and callable(module.run), f"bench/{name}.py: not a part"
    return found


def _common_flags(p: argparse.ArgumentParser, after_part: bool = False) -> None:
    """Flags every part takes, before or after its name. After it they default to SUPPRESS:
    one not given there leaves the value from before the name."""

    def default(value):
        return argparse.SUPPRESS if after_part else value

    p.add_argument(
        "--quick",
        action="store_true",
        default=default(False),
        help="small counts, one round, local only (CI's smoke run)",
    )
    p.add_argument("--runs", type=int, default=default(None), help="rounds per comparison")
    p.add_argument(
        "--no-yarn",
        action="store_true",
        default=default(False),
        help="skip the devcluster even if it runs",
    )


def _parser(modules: dict[str, ModuleType]) -> tuple[argparse.ArgumentParser, dict]:
    p = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--list", action="store_true", help="name every part and what it measures")
    p.add_argument(
        "--table",
        action="store_true",
        help="print the README's table from bench/results/*.json; run nothing",
    )
    p.add_argument("--write-table", action="store_true", help="--table, and write it to README")
    p.add_argument("--only", default="", help=f"comma-separated parts: {', '.join(modules)}")
    _common_flags(p)
    shared = argparse.ArgumentParser(add_help=False)
    _common_flags(shared, after_part=True)
    sub = p.add_subparsers(dest="part", metavar="PART", help="run this part only")
    subs = {}
    for name, module in modules.items():
        subs[name] = sub.add_parser(name, parents=[shared], help=module.ABOUT)
        if hasattr(module, "add_arguments"):
            module.add_arguments(subs[name])
    return p, subs


def main(argv: list[str] | None = None) -> int:
    modules = parts()
    p, subs = _parser(modules)
    args = p.parse_args(argv)
    if args.list:
        width = max(map(len, modules))
        for name, module in modules.items():
            print(f"{name:<{width}}  {module.ABOUT}")
        return 0
    if args.table or args.write_table:
        from bench.lib import table

        print(table.markdown())
        if args.write_table:
            table.update_readme()
        return 0
    if args.part and args.only:
        p.error("name one PART or give --only, not both")
    names = [args.part] if args.part else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in modules]
    if unknown:
        p.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(modules)}")
    names = names or list(modules)
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
    started = time.monotonic()
    for name in names:
        # The named part gets the flags given; the others their own flags' defaults.
        own = args if name == args.part else subs[name].parse_args([])
        ctx = Context(quick=args.quick, runs=args.runs, cluster=cluster, args=own)
        began = time.time()
        try:
            data = modules[name].run(ctx)
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
            from bench.lib import plots

            plots.draw(name, data)
        except ImportError as e:
            log(f"bench: no plot for {name} ({e}); pip install matplotlib")
    if not args.quick and not args.only and not args.part:
        from bench.lib import table

        table.update_readme()
    took = time.monotonic() - started
    log(f"bench: {len(names)} part(s) in {took:.0f} s; broken: {', '.join(broken) or 'none'}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
