"""`tony-jupyter devcluster up|down|status|env|logs|exec|link|...` (also
`python -m tony_jupyter_devcluster`)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

from . import failover, hostrun, maven, netns
from .cluster import DevCluster
from .config import HA_SERVICES, HOSTS_ONLY_NAMES, KDC, NM2_GPUS, SERVICE_NAMES
from .errors import DevClusterError
from .ha import NAMESERVICE
from .hosts import EDGE, HOST_NAMES, MASTER2
from .security import USERS, Security


def _common(**kwargs) -> argparse.ArgumentParser:
    """The options every command takes, before or after its own arguments."""
    common = argparse.ArgumentParser(add_help=False, **kwargs)
    common.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="cluster dir (default: $TONY_JUPYTER_DEVCLUSTER_DIR or ~/.tony-jupyter/devcluster)",
    )
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common()
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
    up.add_argument(
        "--secure",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Hadoop's secure mode: a KDC on this machine, Kerberos and SPNEGO everywhere, "
        f"YARN ACLs, principals {', '.join(USERS)} and yours (default: as the cluster in "
        "--dir was last started; a new one without)",
    )
    up.add_argument(
        "--token-renew-interval",
        type=int,
        metavar="SECONDS",
        help="with --secure: HDFS and YARN delegation tokens must be renewed this often "
        "(default 86400)",
    )
    up.add_argument(
        "--token-max-lifetime",
        type=int,
        metavar="SECONDS",
        help="with --secure: tokens cannot be renewed past this age (default 604800)",
    )
    up.add_argument(
        "--hosts",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"spread the cluster over hosts made of network namespaces ({', '.join(HOST_NAMES)}"
        "; addresses from 198.18.0.0/15), the workers without the edge's files; needs root "
        "(default: as the cluster in --dir was last started; a new one on this host alone)",
    )
    up.add_argument(
        "--hadoop-version",
        metavar="X.Y.Z",
        help=f"the Hadoop release to start: 3.3.x, 3.4.x or 3.5.x (tested: "
        f"{', '.join(maven.TESTED_VERSIONS)}; default: as the cluster in --dir was last started, "
        f"else ${maven.VERSION_ENV}, else {maven.HADOOP_VERSION})",
    )
    up.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="HTTPS only on every web endpoint, from a CA the cluster makes; clients verify "
        "against its PEM bundle (TONY_CA_BUNDLE in `env`) (default: as the cluster in --dir "
        "was last started; a new one without)",
    )
    up.add_argument(
        "--ha",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="two NameNodes of one nameservice and two ResourceManagers with ZooKeeper "
        f"(`failover` kills the active one); with --hosts the second of each on host {MASTER2} "
        "(default: as the cluster in --dir was last started; "
        "a new one without)",
    )
    up.add_argument(
        "--gpus",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"nm2 declares {NM2_GPUS} yarn.io/gpu (counted, no devices) in its gpu partition; "
        "--no-gpus starts a cluster on which no node offers yarn.io/gpu, as on most clusters "
        "(default: as the cluster in --dir was last started; a new one with)",
    )
    sub.add_parser("down", parents=[common], help="stop every daemon this cluster started")
    fail = sub.add_parser(
        "failover",
        parents=[common],
        help="on an --ha cluster: kill the active NameNode (nn) or ResourceManager (rm), see "
        "the other take over, start the killed one again as standby",
    )
    fail.add_argument("master", choices=tuple(failover.PAIRS))
    fail.add_argument("--no-restart", action="store_true", help="leave the killed one stopped")
    wait = sub.add_parser("wait", parents=[common], help="wait until the cluster is usable")
    wait.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    run = sub.add_parser(
        "exec", parents=[common], help="run a command on a host of an `up --hosts` cluster"
    )
    run.add_argument("host", help=f"one of {', '.join(HOST_NAMES)} (with --ha: {MASTER2})")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD...")
    link = sub.add_parser(
        "link",
        parents=[common],
        help="on an `up --hosts` cluster: cut a host off the network (down), or plug it back "
        "in (up); its processes run on, as with a pulled cable",
    )
    link.add_argument("host", help=f"one of {', '.join(HOST_NAMES)} (with --ha: {MASTER2})")
    link.add_argument("state", choices=("down", "up"))
    status = sub.add_parser("status", parents=[common], help="daemons, pids and ports")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    env = sub.add_parser("env", parents=[common], help="print `export` lines for this cluster")
    env.add_argument(
        "--user",
        help="on a secure cluster: a kinit for this principal (alice, bob or yours) and its "
        "KRB5CCNAME",
    )
    env.add_argument("--host", help="on an `up --hosts` cluster: for a shell on this host")
    logs = sub.add_parser("logs", parents=[common], help="print the end of a daemon's log")
    names = (KDC, *SERVICE_NAMES, *HOSTS_ONLY_NAMES, *(s.name for s in HA_SERVICES))
    logs.add_argument("service", choices=names)
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    return parser


def _print_env(cluster: DevCluster, user: str | None = None, host: str | None = None) -> None:
    env = cluster.env(user)
    if host is not None or cluster.hosts is not None:
        host = host or EDGE
        hostrun.hosts_of(cluster).host(host)
        if host != EDGE:  # what runs there: the nodes' Python, nothing of the kernel's
            env["PATH"] = hostrun.host_env(cluster, host, cluster.java_home)["PATH"]
        env[hostrun.ON_HOST_ENV] = host
    for key, value in env.items():
        print(f"export {key}={shlex.quote(value)}")


def _exec(cluster: DevCluster, host: str, argv: list[str]) -> int:
    argv = argv[1:] if argv[:1] == ["--"] else argv
    command, env = hostrun.exec_argv(cluster, host, argv)
    netns.require_root("`devcluster exec`")
    netns_name = hostrun.hosts_of(cluster).host(host).netns
    if netns_name not in netns.namespaces(hostrun.hosts_of(cluster).topology):
        raise DevClusterError(
            f"Host {host} of the devcluster in {cluster.dir} is not up (no namespace "
            f"{netns_name}); start it with `tony-jupyter devcluster up --hosts`."
        )
    os.execvpe(command[0], command, env)


def _link(cluster: DevCluster, host: str, state: str) -> int:
    hosts = hostrun.hosts_of(cluster)
    hosts.host(host)  # an unknown name: the hosts there are
    netns.require_root("`devcluster link`")
    names = netns.set_link(hosts.topology, host, state == "up")
    print(f"{host}: link {state} ({', '.join(names)})")
    return 0


def _ask_from_edge(cluster: DevCluster, command: str) -> bool:
    """Whether `wait`, `failover` or `status` must run again on the edge: on an `up --hosts`
    cluster `wait` asks the daemons, and on an `up --hosts --ha` one `failover` and `status` ask
    the masters which is active; only a host reaches them (the machine's own namespace must not
    even try)."""
    if cluster.hosts is None or cluster.reaches_masters:
        return False
    if command != "wait" and not cluster.layout.ha:
        return False
    edge = cluster.hosts.host(EDGE).netns
    if edge in netns.namespaces(cluster.hosts.topology):
        netns.require_root(f"`devcluster {command}` on several hosts")
        return True
    if command == "status":
        return False  # it says what is not running, without asking anyone
    raise DevClusterError(
        f"The hosts of the devcluster in {cluster.dir} are not up (no namespace {edge}): "
        f"nothing to {'fail over' if command == 'failover' else 'wait for'}. Start it with "
        f"`tony-jupyter devcluster up --hosts{' --ha' if cluster.layout.ha else ''}`."
    )


def _security(args: argparse.Namespace) -> Security | bool | None:
    lifetimes = {
        "token_renew_interval_s": args.token_renew_interval,
        "token_max_lifetime_s": args.token_max_lifetime,
    }
    given = {k: v for k, v in lifetimes.items() if v is not None}
    if given and not args.secure:
        raise DevClusterError(
            "--token-renew-interval and --token-max-lifetime set Kerberos delegation tokens' "
            "lifetimes: they need --secure."
        )
    if args.secure:
        return Security(**given)
    return args.secure


def _status(cluster: DevCluster, as_json: bool) -> int:
    rows = cluster.status()
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        if cluster.hosts is not None:
            print(f"{'HOST':<9} {'NAMESPACE':<16} {'ADDRESS':<13} PRIVATE ADDRESS")
            for h in hostrun.host_rows(cluster):
                print(
                    f"{h['host']:<9} {h['netns']:<16} {h['address']:<13} "
                    f"{h['private_address'] or '-'}"
                )
            print()
        ha = cluster.layout.ha
        on_hosts = cluster.hosts is not None
        print(
            f"{'SERVICE':<16} {'HOST     ' if on_hosts else ''}{'PID':>7}  {'ALIVE':<5}  "
            f"{'HA STATE  ' if ha else ''}PORTS"
        )
        for row in rows:
            ports = " ".join(f"{what}={port}" for what, port in row["ports"].items())
            pid = row["pid"] if row["pid"] is not None else "-"
            state = f"{row['ha_state'] or '-':<10}" if ha else ""
            alive = "yes" if row["alive"] else "no"
            host = f"{row['host']:<9}" if on_hosts else ""
            print(f"{row['service']:<16} {host}{pid:>7}  {alive:<5}  {state}{ports}")
        print(f"dir: {cluster.dir}")
        print(f"hadoop: {cluster.hadoop_version}")
        if cluster.ca_bundle is not None:
            print(f"HTTPS only; CA bundle (TONY_CA_BUNDLE): {cluster.ca_bundle}")
        if ha:
            print(_HA_HOSTS_NOTE if cluster.hosts is not None else _HA_NOTE)
    # LSB status convention: 3 means "not running".
    return 0 if all(row["alive"] for row in rows) else 3


_HA_NOTE = (
    f"HA: nameservice {NAMESERVICE} (fs.defaultFS hdfs://{NAMESERVICE}), two ResourceManagers; "
    "the addresses above are the active ones; `tony-jupyter devcluster failover nn|rm` kills one"
)


_HA_HOSTS_NOTE = (
    f"HA: nameservice {NAMESERVICE} (nn1 on master, nn2 on master2), ResourceManagers rm1 on "
    "master and rm2 on master2, ZooKeeper on master; the addresses above are the first of each "
    "pair (clients on the hosts follow the active one through HADOOP_CONF_DIR); `status` and "
    "`failover nn|rm` ask from the edge"
)


def _logs(cluster: DevCluster, service: str, lines: int) -> int:
    path = cluster.log_file(service)
    if not path.is_file():
        raise DevClusterError(f"{service} has no log yet ({path}); has `up` run in {cluster.dir}?")
    with open(path, errors="replace") as fh:
        sys.stdout.writelines(deque(fh, maxlen=lines))
    return 0


def _exec_options(args: argparse.Namespace) -> None:
    """`exec HOST --dir D -- CMD`: what stands between the host and `--` is exec's own
    options, as before the host (argparse's remainder would take it into the command)."""
    if "--" not in args.argv:
        return
    i = args.argv.index("--")
    head, args.argv = args.argv[:i], args.argv[i + 1 :]
    if head:
        _common(prog="tony-jupyter devcluster exec HOST").parse_args(head, namespace=args)


def _cluster(args: argparse.Namespace) -> DevCluster:
    up = args.command == "up"
    return DevCluster(
        args.dir,
        getattr(args, "port_offset", None),
        _security(args) if up else None,
        args.hosts if up else None,
        args.tls if up else None,
        hadoop_version=args.hadoop_version if up else None,
        ha=args.ha if up else None,
        gpus=args.gpus if up else None,
    )


def _say(*lines: str) -> None:
    for line in lines:
        print(line, file=sys.stderr)


def _ready_on_hosts(cluster: DevCluster) -> None:
    assert cluster.hosts is not None
    _say(
        f"devcluster ready on hosts {', '.join(cluster.hosts.topology.names)}: "
        f"ResourceManager {cluster.rm_url}, NameNode {cluster.webhdfs_url}, reachable "
        "from the hosts only; `tony-jupyter devcluster exec edge -- bash` for a "
        "shell on the edge"
    )
    if cluster.layout.ha:
        _say(_HA_HOSTS_NOTE)
    if cluster.security is not None:
        _say(
            "Kerberos is on (the KDC on master; principals name their hosts, e.g. "
            "nn/master, dn/worker1): `eval $(tony-jupyter devcluster env --host "
            "edge --user alice)` in a shell on the edge for a ticket there"
        )


def _ready_here(cluster: DevCluster) -> None:
    _say(
        f"devcluster ready: ResourceManager {cluster.rm_url}, "
        f"NameNode {cluster.webhdfs_url}; `eval $(tony-jupyter devcluster env)` "
        "to use it from a shell"
    )
    if cluster.ca_bundle is not None:
        _say(f"HTTPS only; CA bundle: {cluster.ca_bundle}")
    if not cluster.layout.gpus:
        _say("no node offers yarn.io/gpu (--no-gpus)")
    if cluster.layout.ha:
        _say(_HA_NOTE)
    if cluster.security is not None:
        _say(
            "Kerberos is on: `eval $(tony-jupyter devcluster env --user alice)` "
            f"for a ticket (principals: {', '.join(cluster.users)})"
        )


def _up(cluster: DevCluster, args: argparse.Namespace) -> int:
    already = cluster.is_running()
    cluster.up(timeout=args.timeout)
    if already:
        _say(f"devcluster already running in {cluster.dir}")
    elif cluster.hosts is not None:
        _ready_on_hosts(cluster)
    else:
        _ready_here(cluster)
    _print_env(cluster)
    return 0


def _rerun_on_edge(cluster: DevCluster, args: argparse.Namespace) -> int:
    rerun = [args.command, *(["--json"] if getattr(args, "json", False) else [])]
    if args.command == "failover":
        rerun += [args.master, *(["--no-restart"] if args.no_restart else [])]
    if args.command == "wait":
        rerun += ["--timeout", f"{args.timeout:g}"]
    return hostrun.rerun_on_edge(cluster, rerun)


def _failover(cluster: DevCluster, args: argparse.Namespace) -> int:
    done = failover.failover(cluster, args.master, restart=not args.no_restart)
    again = "; started again as standby" if done.restarted else " (left stopped)"
    print(
        f"killed {done.killed}; {done.active} is active, {done.seconds:.1f} s after the kill{again}"
    )
    return 0


def _down(cluster: DevCluster, args: argparse.Namespace) -> int:
    cluster.down()
    return 0


def _env(cluster: DevCluster, args: argparse.Namespace) -> int:
    _print_env(cluster, args.user, args.host)
    return 0


def _wait(cluster: DevCluster, args: argparse.Namespace) -> int:
    cluster.wait_usable(args.timeout)
    return 0


# Each command but `up`: what it runs (failover, status and wait on the edge of a --hosts
# cluster, as a user's client there would).
_COMMANDS: dict[str, Callable[[DevCluster, argparse.Namespace], int]] = {
    "failover": _failover,
    "down": _down,
    "status": lambda cluster, args: _status(cluster, args.json),
    "env": _env,
    "wait": _wait,
    "exec": lambda cluster, args: _exec(cluster, args.host, args.argv),
    "link": lambda cluster, args: _link(cluster, args.host, args.state),
    "logs": lambda cluster, args: _logs(cluster, args.service, args.lines),
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="devcluster: %(message)s", stream=sys.stderr)
    if args.command == "exec":
        _exec_options(args)
    try:
        cluster = _cluster(args)
        if args.command == "up":
            return _up(cluster, args)
        if args.command in ("wait", "failover", "status") and _ask_from_edge(cluster, args.command):
            return _rerun_on_edge(cluster, args)
        return _COMMANDS[args.command](cluster, args)
    except DevClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
