"""Running programs on the hosts of a several-host devcluster (`up --hosts`): each host's
environment, `devcluster exec`, and the readiness wait, which runs on the edge because the
machine's own namespace reaches no host. Functions of the cluster, as clusterview.py shows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .clusterview import ClusterView
from .errors import DevClusterError
from .hosts import EDGE, Hosts

# Set in whatever `exec` runs: the host it runs on (`wait` on the edge reads it).
ON_HOST_ENV = "TONY_DEVCLUSTER_HOST"
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Away from the edge a host starts from a clean environment: nothing of the kernel's venv.
_PASSED = ("LANG", "LC_ALL", "TZ", "TERM", "USER", "LOGNAME")


def hosts_of(cluster: ClusterView) -> Hosts:
    if cluster.hosts is None:
        raise DevClusterError(
            f"The devcluster in {cluster.dir} runs on this machine's own host, not on several: "
            "`exec` and `--host` need one started with `tony-jupyter devcluster up --hosts`."
        )
    return cluster.hosts


def host_env(cluster: ClusterView, name: str, java_home: Path) -> dict[str, str]:
    """The environment of a program on host ``name``: on the edge the caller's own plus the
    cluster's; elsewhere only the cluster's, with the JDK and the nodes' Python on PATH."""
    hosts = hosts_of(cluster)
    hosts.host(name)
    if name == EDGE:
        env = dict(os.environ)
    else:
        env = {key: os.environ[key] for key in _PASSED if key in os.environ}
        # A ticket cache from this shell is not the daemons' business: they use their keytabs.
        # (On the edge, where no daemon runs, it is the user's ticket: `exec edge` keeps it.)
        env["HOME"] = str(Path.home())  # an empty tmpfs there
        env["PATH"] = os.pathsep.join(
            [str(java_home / "bin"), str(hosts.python.parent), _SYSTEM_PATH]
        )
    env.update(cluster.env())
    env["JAVA_HOME"] = str(java_home)
    return env


def exec_argv(cluster: ClusterView, name: str, argv: list[str]) -> tuple[list[str], dict]:
    """What `devcluster exec NAME -- ARGV...` runs, and in which environment."""
    if not argv:
        raise DevClusterError("`devcluster exec HOST -- CMD...`: name a command to run.")
    hosts = hosts_of(cluster)
    env = host_env(cluster, name, cluster.java_home)
    env[ON_HOST_ENV] = name
    return hosts.command(name, argv), env


def wait_on_edge(cluster: ClusterView, timeout: float) -> None:
    """`up`'s readiness wait, run by `devcluster wait` on the edge (as a user's client would)."""
    argv, env = exec_argv(
        cluster,
        EDGE,
        [sys.executable, "-m", "tony_jupyter_devcluster", "wait", "--dir", str(cluster.dir)]
        + ["--timeout", f"{timeout:g}"],
    )
    try:
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, timeout=timeout + 60
        )
    except subprocess.TimeoutExpired:
        raise DevClusterError(
            f"`devcluster wait` on the edge did not end in {timeout:g} s"
        ) from None
    if proc.returncode != 0:
        raise DevClusterError(proc.stderr.strip().removeprefix("error: ") or "`wait` failed")


def rerun_on_edge(cluster: ClusterView, args: list[str]) -> int:
    """`devcluster ARGS` run again on the edge, its output this one's, its exit status returned:
    for what must ask the masters (`failover`, an HA cluster's `status`), which the machine's
    own namespace cannot reach."""
    argv = [sys.executable, "-m", "tony_jupyter_devcluster", *args, "--dir", str(cluster.dir)]
    command, env = exec_argv(cluster, EDGE, argv)
    return subprocess.run(command, env=env, check=False).returncode


def on_host() -> str | None:
    return os.environ.get(ON_HOST_ENV)


def host_rows(cluster: ClusterView) -> list[dict]:
    hosts = hosts_of(cluster)
    return [
        {
            "host": h.name,
            "netns": h.netns,
            "address": h.address,
            "private_address": h.private_address,
        }
        for h in hosts.topology.hosts
    ]
