"""The masters of an `up --ha` cluster at run time: which of a pair is active, making nn1 active
as `up` ends, and `devcluster failover nn|rm` (kill the active one, see the other take over).

The NameNodes fail over by hand (``haadmin -transitionToActive``, no ZKFC: ``ha.py`` says why),
so here; the ResourceManagers by their own elector in ZooKeeper, which this only waits for."""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil
import requests

from . import daemons, ha, kerberos, process
from .clusterview import ClusterView
from .config import Layout
from .errors import DevClusterError

log = logging.getLogger("tony_jupyter_devcluster.cluster")

PAIRS = {"nn": ha.NAMENODES, "rm": ha.RESOURCEMANAGERS}
_WHAT = {"nn": "NameNode", "rm": "ResourceManager"}
_HAADMIN = "org.apache.hadoop.hdfs.tools.DFSHAAdmin"
_PROBE_TIMEOUT = 2.0
# Whose keytab haadmin logs in from on a secure cluster: the NameNodes' service kind.
HAADMIN_PRINCIPAL = "nn"


@dataclass(frozen=True)
class Failover:
    """What `devcluster failover` did: ``seconds`` from the kill (at ``killed_at``, epoch
    seconds) to the first call that the new active master answered."""

    kind: str
    killed: str
    active: str
    killed_at: float
    seconds: float
    restarted: bool


def kind_of(service: str) -> str | None:
    return next((kind for kind, pair in PAIRS.items() if service in pair.values()), None)


def web_url(layout: Layout, service: str) -> str:
    scheme = "https" if layout.tls else "http"
    return f"{scheme}://{layout.host_of(service)}:{layout.ports(service)[scheme]}"


def ha_state(layout: Layout, http: requests.Session, service: str) -> str | None:
    """ "active", "standby" (or the RM's "initializing") of a master; None when it does not
    answer, or ``service`` is none."""
    kind = kind_of(service)
    if kind is None:
        return None
    url = web_url(layout, service)
    try:
        if kind == "nn":
            qry = {"qry": "Hadoop:service=NameNode,name=NameNodeStatus"}
            resp = http.get(f"{url}/jmx", params=qry, timeout=_PROBE_TIMEOUT)
            resp.raise_for_status()
            return str(resp.json()["beans"][0]["State"]).lower()
        if kind == "rm":
            resp = http.get(
                f"{url}/ws/v1/cluster/info", timeout=_PROBE_TIMEOUT, allow_redirects=False
            )
            if resp.is_redirect:  # a standby RM sends its clients to the active one
                return "standby"
            resp.raise_for_status()
            return str(resp.json()["clusterInfo"]["haState"]).lower()
    except (requests.RequestException, ValueError, KeyError, IndexError):
        return None
    return None


def active(layout: Layout, http: requests.Session, kind: str) -> str | None:
    """The active master of the pair ``kind`` ("nn" or "rm"), None if neither is."""
    return next((s for s in PAIRS[kind].values() if ha_state(layout, http, s) == "active"), None)


def active_url(layout: Layout, http: requests.Session, kind: str) -> str:
    """The active master's web URL; the first's while neither is (its error then says so)."""
    service = active(layout, http, kind) or next(iter(PAIRS[kind].values()))
    return web_url(layout, service)


def haadmin(cluster: ClusterView, *args: str) -> None:
    """``hdfs haadmin ARGS`` (one short JVM); a refused connection is not retried. On a secure
    cluster as the NameNodes' own principal (hdfs, the HDFS superuser that a state change
    needs), from a fresh ticket out of their keytab, as an operator's `kinit -kt` would."""
    java = cluster.java_home / "bin" / "java"
    cmd = [str(java), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    cmd += [*cluster.jvm_flags, "-cp", ":".join(cluster.layout.classpath()), _HAADMIN]
    cmd += ["-D", "ipc.client.connect.max.retries=1", *args]
    env = daemons.daemon_env(cluster, cluster.java_home)
    if cluster.layout.secure:
        env["KRB5CCNAME"] = f"FILE:{kerberos.kinit(cluster.layout, HAADMIN_PRINCIPAL)}"
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise DevClusterError(
            f"`hdfs haadmin {' '.join(args)}` failed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-800:]}"
        )


def activate(cluster: ClusterView, check_alive: Callable[[], None], timeout: float) -> None:
    """As `up` ends: nn1 active (both NameNodes start as standby) unless one already is, and
    an RM elected; raises when ``timeout`` passes first."""
    layout, http = cluster.layout, cluster.http
    nn1 = ha.NAMENODES["nn1"]
    deadline = time.monotonic() + timeout
    while True:
        check_alive()
        nn = active(layout, http, "nn")
        if nn is None and ha_state(layout, http, nn1) == "standby":
            haadmin(cluster, "-transitionToActive", "nn1")
            continue
        rm = active(layout, http, "rm")
        if nn and rm:
            log.info("active: %s, %s", nn, rm)
            return
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"No active {'NameNode' if nn is None else 'ResourceManager'} within "
                f"{timeout:g} s; the daemons' logs are in {layout.logs}; everything started "
                "has been stopped."
            )
        time.sleep(0.25)


def failover(cluster: ClusterView, kind: str, restart: bool = True) -> Failover:
    """SIGKILL the active master of ``kind`` ("nn" or "rm"); for the NameNodes make the other
    active (the RMs elect theirs); wait for the first call the new active one answers; then,
    with ``restart``, start the killed one again and wait until it is standby."""
    layout, http = cluster.layout, cluster.http
    if not layout.ha:
        raise DevClusterError(
            f"`devcluster failover` needs an HA cluster; the one in {cluster.dir} has one "
            "NameNode and one ResourceManager. Start one with `tony-jupyter devcluster up --ha` "
            "(in another --dir, or after `down`)."
        )
    if kind not in PAIRS:
        raise DevClusterError(f"Fail over what? {kind!r}: choose nn or rm.")
    what = _WHAT[kind]
    killed = active(layout, http, kind)
    if killed is None:
        raise DevClusterError(
            f"No {what} of the devcluster in {cluster.dir} is active: nothing to fail over "
            "from. See `tony-jupyter devcluster status`."
        )
    other = next(s for s in PAIRS[kind].values() if s != killed)
    if process.live_process(layout.pid_file(other)) is None:
        raise DevClusterError(
            f"The standby {what} ({other}) is not running: killing {killed} would leave none. "
            "Restart the cluster (`down`, `up --ha`)."
        )
    proc = process.live_process(layout.pid_file(killed))
    assert proc is not None  # it answered as active
    started, killed_at = time.monotonic(), time.time()
    proc.send_signal(signal.SIGKILL)
    psutil.wait_procs([proc], timeout=10)
    log.info("killed %s (pid %d)", killed, proc.pid)
    if kind == "nn":
        other_id = next(i for i, s in PAIRS[kind].items() if s == other)
        haadmin(cluster, "-transitionToActive", "--forceactive", other_id)
    _wait_state(cluster, other, "active", 120.0)
    seconds = time.monotonic() - started
    if restart:
        start_standby(cluster, killed)
    return Failover(kind, killed, other, killed_at, seconds, restart)


def start_standby(cluster: ClusterView, service: str, timeout: float = 180.0) -> None:
    """Start a killed master again; it joins its pair as the standby (a NameNode always starts
    as one here, an RM finds the other elected). Cheap: one JVM start, about 5 s here."""
    java_home, layout = cluster.java_home, cluster.layout
    cmd = daemons.daemon_cmd(cluster, service, java_home)
    env = daemons.daemon_env(cluster, java_home)
    process.start(cmd, env, layout.log_file(service), layout.pid_file(service))
    _wait_state(cluster, service, "standby", timeout)


def _wait_state(cluster: ClusterView, service: str, state: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while ha_state(cluster.layout, cluster.http, service) != state:
        if process.live_process(cluster.layout.pid_file(service)) is None:
            log_file = cluster.layout.log_file(service)
            raise DevClusterError(
                f"{service} exited; its log is {log_file}; it ends with:\n{process.tail(log_file)}"
            )
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"{service} did not become {state} within {timeout:g} s; see "
                f"{cluster.layout.log_file(service)}."
            )
        time.sleep(0.1)
