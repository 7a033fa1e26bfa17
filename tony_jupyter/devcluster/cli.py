"""`tony-jupyter devcluster up|down|status|env|logs` (also `python -m tony_jupyter.devcluster`)."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from collections import deque
from pathlib import Path

from .cluster import DevCluster
from .config import SERVICE_NAMES
from .errors import DevClusterError


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="cluster dir (default: $TONY_JUPYTER_DEVCLUSTER_DIR or ~/.tony-jupyter/devcluster)",
    )
    parser = argparse.ArgumentParser(
        prog="tony-jupyter devcluster",
        description="A real pseudo-distributed Hadoop (HDFS + YARN) on 127.0.0.1.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", parents=[common], help="start the cluster and wait until usable")
    up.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (default 300)")
    up.add_argument(
        "--port-offset",
        type=int,
        default=None,
        help="add this to every port, to run beside another cluster (e.g. 10000: RM on 18088); "
        "default $TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET or 0",
    )
    sub.add_parser("down", parents=[common], help="stop every daemon this cluster started")
    status = sub.add_parser("status", parents=[common], help="daemons, pids and ports")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("env", parents=[common], help="print `export` lines for this cluster")
    logs = sub.add_parser("logs", parents=[common], help="print the end of a daemon's log")
    logs.add_argument("service", choices=SERVICE_NAMES)
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    return parser


def _print_env(cluster: DevCluster) -> None:
    for key, value in cluster.env().items():
        print(f"export {key}={shlex.quote(value)}")


def _status(cluster: DevCluster, as_json: bool) -> int:
    rows = cluster.status()
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'SERVICE':<16} {'PID':>7}  {'ALIVE':<5}  PORTS")
        for row in rows:
            ports = " ".join(f"{what}={port}" for what, port in row["ports"].items())
            pid = row["pid"] if row["pid"] is not None else "-"
            print(f"{row['service']:<16} {pid:>7}  {'yes' if row['alive'] else 'no':<5}  {ports}")
        print(f"dir: {cluster.dir}")
    # LSB status convention: 3 means "not running".
    return 0 if all(row["alive"] for row in rows) else 3


def _logs(cluster: DevCluster, service: str, lines: int) -> int:
    path = cluster.log_file(service)
    if not path.is_file():
        raise DevClusterError(f"{service} has no log yet ({path}); has `up` run in {cluster.dir}?")
    with open(path, errors="replace") as fh:
        sys.stdout.writelines(deque(fh, maxlen=lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="devcluster: %(message)s", stream=sys.stderr)
    try:
        cluster = DevCluster(args.dir, getattr(args, "port_offset", None))
        if args.command == "up":
            already = cluster.is_running()
            cluster.up(timeout=args.timeout)
            if already:
                print(f"devcluster already running in {cluster.dir}", file=sys.stderr)
            else:
                print(
                    f"devcluster ready: ResourceManager {cluster.rm_url}, "
                    f"NameNode {cluster.webhdfs_url}; `eval $(tony-jupyter devcluster env)` "
                    "to use it from a shell",
                    file=sys.stderr,
                )
            _print_env(cluster)
            return 0
        if args.command == "down":
            cluster.down()
            return 0
        if args.command == "status":
            return _status(cluster, args.json)
        if args.command == "env":
            _print_env(cluster)
            return 0
        return _logs(cluster, args.service, args.lines)
    except DevClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
