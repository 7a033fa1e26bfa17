"""Crashing and restarting a NodeManager as a lost host would: what the fault-tolerance tests
and benchmarks strike with. Functions of the cluster, as clusterview.py shows it."""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path

import psutil

from . import daemons, process, ready
from .clusterview import ClusterView
from .errors import DevClusterError

log = logging.getLogger("tony_jupyter_devcluster.cluster")


def kill_node(cluster: ClusterView, name: str) -> list[int]:
    """Crash NodeManager ``name`` as a lost host would: SIGKILL its JVM and every process
    in its containers (its process tree, taken before anything dies) at once, without a
    chance to stop them cleanly. Returns the pids killed."""
    pid_file = nm_pid_file(cluster, name)
    nm = process.live_process(pid_file)
    if nm is None:
        raise DevClusterError(f"{name} is not running in {cluster.dir}; nothing to kill.")
    family = [nm]
    try:
        family += nm.children(recursive=True)
    except psutil.Error:
        pass
    for proc in family:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)
    pid_file.unlink(missing_ok=True)
    log.info("killed %s and %d container processes", name, len(family) - 1)
    return [p.pid for p in family]


def start_node(cluster: ClusterView, name: str, timeout: float = 180.0) -> None:
    """Start NodeManager ``name`` again (after :meth:`kill_node`) and return once the RM
    has taken its new registration: NM recovery is off, so the restarted NM reports no
    containers, and the RM ends those the old one ran (exit status ABORTED, node lost)."""
    pid_file = nm_pid_file(cluster, name)
    if process.live_process(pid_file) is not None:
        raise DevClusterError(f"{name} is already running in {cluster.dir}.")
    java_home = cluster.java_home
    started = time.time()
    pid = process.start(
        daemons.daemon_cmd(cluster, name, java_home),
        daemons.daemon_env(cluster, java_home),
        cluster.layout.log_file(name),
        pid_file,
    )
    log.info("started %s again (pid %d)", name, pid)
    rpc = cluster.layout.ports(name)["rpc"]
    deadline = time.monotonic() + timeout
    while True:
        if process.live_process(pid_file) is None:
            log_file = cluster.layout.log_file(name)
            raise DevClusterError(
                f"{name} exited while starting again; its log is {log_file}; it ends "
                f"with:\n{process.tail(log_file)}"
            )
        nm_ports = {nm: cluster.layout.ports(nm)["rpc"] for nm in cluster.layout.nodemanagers}
        if not ready.yarn_pending(cluster.rm_url, nm_ports, cluster.http, cluster.layout.gpus):
            # The old registration stays RUNNING until the new NM's first status update,
            # which carries a health report made after it started.
            nodes = ready.rm_nodes(cluster.rm_url, cluster.http)
            node = next(n for n in nodes if n["id"].endswith(f":{rpc}"))
            if int(node.get("lastHealthUpdate") or 0) / 1000 >= started - 1:
                return
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"{name} did not register with the ResourceManager again within "
                f"{timeout:g} s; see {cluster.layout.log_file(name)}."
            )
        time.sleep(0.25)


def restart_node(cluster: ClusterView, name: str, timeout: float = 180.0) -> list[int]:
    """:meth:`kill_node` then :meth:`start_node`: a node that crashed and came back."""
    killed = kill_node(cluster, name)
    start_node(cluster, name, timeout)
    return killed


def nm_pid_file(cluster: ClusterView, name: str) -> Path:
    if name not in cluster.layout.nodemanagers:
        raise DevClusterError(
            f"No NodeManager named {name!r}; choose one of: "
            f"{', '.join(cluster.layout.nodemanagers)}."
        )
    return cluster.layout.pid_file(name)
