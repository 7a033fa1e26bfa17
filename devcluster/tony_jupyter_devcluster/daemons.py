"""Starting the devcluster's daemons: their command lines, environment and pid files, and the
NameNode's first format. Functions of the cluster, as clusterview.py shows it."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import ha, hostrun, process
from .clusterview import ClusterView
from .config import DATANODE2, HA_SERVICES, HOSTS_ONLY_NAMES, KDC, SERVICE_NAMES, Layout, service
from .errors import DevClusterError
from .hosts import SERVICE_HOSTS

log = logging.getLogger("tony_jupyter_devcluster.cluster")

# Daemons only. Measured here on 2 cores (start-up CPU-seconds and RSS summed over the five):
# C1 only halves start-up CPU (about 21 s against 45 s), and the RM's load never needs C2; the
# serial collector with a small initial heap and tight free ratios gives memory back, about
# 800 MB RSS in all against 1,000 MB with G1 and 1,230 MB with default ratios.
_DAEMON_JVM_OPTS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xms32m",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=30",
)


def clear_pid_files(cluster: ClusterView) -> None:
    """Drop pid files of dead daemons; refuse to start over a half-running cluster."""
    alive = []
    for name in (*SERVICE_NAMES, *HOSTS_ONLY_NAMES, *(s.name for s in HA_SERVICES), KDC):
        pid_file = cluster.layout.pid_file(name)
        if process.is_stale(pid_file):
            entry = process.read_pid(pid_file)
            pid = entry[0] if entry else "?"
            log.warning("removing stale pid file %s (pid %s is not running)", pid_file, pid)
            pid_file.unlink()
        elif pid_file.exists():
            alive.append(name)
    if alive:
        raise DevClusterError(
            f"The devcluster in {cluster.dir} is only partly running ({', '.join(alive)} alive, "
            "the rest stopped or crashed; see `tony-jupyter devcluster status` and `logs`). "
            "Run `tony-jupyter devcluster down` and then `up` again."
        )


def daemon_cmd(cluster: ClusterView, name: str, java_home: Path) -> list[str]:
    spec = service(name)
    cmd = [
        str(java_home / "bin" / "java"),
        f"-Dproc_{name}",  # names the JVM in `ps`, like Hadoop's scripts do
        f"-Xmx{spec.heap_mb}m",
        *_DAEMON_JVM_OPTS,
        *cluster.jvm_flags,
        f"-Dhadoop.log.dir={cluster.layout.logs}",
        f"-Dyarn.log.dir={cluster.layout.logs}",
        f"-Dhadoop.home.dir={cluster.dir}",
        f"-Dhadoop.id.str={cluster.user}",
        "-cp",
        ":".join(cluster.layout.classpath(name)),
        spec.main_class,
    ]
    if cluster.layout.ha:
        cmd += ha.daemon_args(name, cluster.layout.data, cluster.layout.conf)
    if cluster.hosts is None:
        return cmd
    if name in _OTHER_DATANODES:
        cmd += _datanode_args(cluster, name)
    return cluster.hosts.command(SERVICE_HOSTS[name], cmd)


# `up --hosts`: the DataNodes beyond worker1's, each with its data dir.
_OTHER_DATANODES = {DATANODE2.name: "dn2", "datanode3": "dn3"}


def _datanode_args(cluster: ClusterView, name: str) -> list[str]:
    """worker2's or worker3's DataNode: the shared hdfs-site names worker1's; Hadoop's generic
    options (which the DataNode parses) move it to its own host and data dir."""
    host, ports = SERVICE_HOSTS[name], cluster.layout.ports(name)
    props = {
        "dfs.datanode.address": f"{host}:{ports['data']}",
        "dfs.datanode.http.address": f"{host}:{ports['http']}",
        "dfs.datanode.ipc.address": f"{host}:{ports['ipc']}",
        "dfs.datanode.hostname": host,
        "dfs.datanode.data.dir": f"file://{cluster.layout.data / _OTHER_DATANODES[name]}",
    }
    if cluster.layout.tls:
        props["dfs.datanode.https.address"] = f"{host}:{ports['https']}"
    return [arg for key, value in props.items() for arg in ("-D", f"{key}={value}")]


def daemon_env(cluster: ClusterView, java_home: Path) -> dict[str, str]:
    """The NMs pass the whitelisted part of this to every container."""
    if cluster.hosts is not None:
        return hostrun.host_env(cluster, "worker1", java_home)
    env = dict(os.environ)
    # A ticket cache from `eval $(devcluster env --user ...)` in this shell is not the
    # daemons' business: they log in from their keytabs.
    env.pop("KRB5CCNAME", None)
    env.update(cluster.env())
    env["JAVA_HOME"] = str(java_home)
    # Containers run `java` and `python` by name: make both the cluster's.
    python_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([str(java_home / "bin"), python_bin, env.get("PATH", "")])
    return env


def hdfs_formatted(layout: Layout) -> bool:
    """Whether the NameNode's metadata exists (written by the release that formatted it)."""
    return (layout.data / "nn" / "current").is_dir()


def format_namenode(cluster: ClusterView, java_home: Path) -> None:
    if hdfs_formatted(cluster.layout):
        if cluster.layout.ha:
            _standby_name_dir(cluster.layout)
        return
    log.info("formatting the NameNode")
    cmd = daemon_cmd(cluster, "namenode", java_home) + [
        "-format",
        "-nonInteractive",
        "-force",
    ]
    log_file = cluster.layout.log_file("namenode-format")
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "wb") as out:
        proc = subprocess.run(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=daemon_env(cluster, java_home),
            timeout=180,
            check=False,
        )
    if proc.returncode != 0:
        raise DevClusterError(
            f"Formatting the NameNode failed (exit {proc.returncode}); see {log_file}:\n"
            + process.tail(log_file)
        )
    if cluster.layout.ha:
        _standby_name_dir(cluster.layout)


def _standby_name_dir(layout: Layout) -> None:
    """nn2's metadata: a copy of nn1's as formatted (``ha.py`` says why not -bootstrapStandby)."""
    if not ha.shared_edits(layout.data).is_dir():
        raise DevClusterError(
            f"The HDFS in {layout.root} was formatted without --ha (it has no shared edits "
            f"directory {ha.shared_edits(layout.data)}): start the HA cluster in another --dir, "
            "or this one without --ha."
        )
    nn2 = ha.name_dir(layout.data, "namenode2")
    if not (nn2 / "current").is_dir():
        shutil.copytree(ha.name_dir(layout.data, "namenode"), nn2, dirs_exist_ok=True)
