"""Checks run before anything starts: Java, free ports, free disk.

Each failure raises :class:`DevClusterError` with the fix, because the daemons themselves fail
late and quietly (a NodeManager on a full disk just reports UNHEALTHY and apps sit in ACCEPTED).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from .errors import DevClusterError

# Hadoop 3.5 requires Java 17. It was tried on 17 and 25 (3.4 breaks on 23+ where
# Subject.getSubject is gone, HADOOP-19212; 3.5 does not); nothing newer has been tried.
JAVA_MIN, JAVA_MAX = 17, 25

# Below this the NameNode (dfs.namenode.resource.du.reserved, 100 MB) drops into safe mode and
# the first TensorFlow container fills the rest; the margin is for container logs and jars.
MIN_FREE_MB = 1024

_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


def find_java_home() -> Path:
    """$JAVA_HOME, else the JDK that the ``java`` on PATH belongs to."""
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        return Path(env_home)
    java = shutil.which("java")
    if java is None:
        raise DevClusterError(
            "No Java found: JAVA_HOME is unset and there is no `java` on PATH. The devcluster "
            f"runs Hadoop's daemons on a JDK {JAVA_MIN}-{JAVA_MAX}. Install one (Debian/Ubuntu: "
            "`apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME to an installed JDK, "
            "e.g. `export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64`."
        )
    return Path(java).resolve().parent.parent


def java_major_version(java_home: Path) -> int:
    """The feature release (17, 21, ...) that ``$java_home/bin/java -version`` reports."""
    java = java_home / "bin" / "java"
    try:
        proc = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise DevClusterError(
            f"`{java} -version` did not answer within 30 s. Check that JAVA_HOME={java_home} "
            f"is a working JDK {JAVA_MIN}-{JAVA_MAX}."
        ) from err
    except OSError as err:
        raise DevClusterError(
            f"Cannot run Java at {java} ({err.strerror}). JAVA_HOME={java_home} does not point "
            f"at a JDK; set JAVA_HOME to a JDK {JAVA_MIN}-{JAVA_MAX}, e.g. "
            "/usr/lib/jvm/java-17-openjdk-amd64."
        ) from err
    out = proc.stderr + proc.stdout
    match = _VERSION_RE.search(out)
    if match is None:
        raise DevClusterError(
            f"Could not read a version from `{java} -version` (it printed: {out.strip()[:200]!r}). "
            f"Set JAVA_HOME to a JDK {JAVA_MIN}-{JAVA_MAX}."
        )
    major = int(match.group(1))
    # Java 8 and older report "1.8.0_x".
    return int(match.group(2) or 0) if major == 1 else major


def check_java(java_home: Path) -> int:
    major = java_major_version(java_home)
    if not JAVA_MIN <= major <= JAVA_MAX:
        why = (
            f"Hadoop 3.5 needs Java {JAVA_MIN} or newer"
            if major < JAVA_MIN
            else f"it has been tried on Java {JAVA_MIN} to {JAVA_MAX} only"
        )
        raise DevClusterError(
            f"Java {major} at {java_home} cannot run the devcluster's Hadoop: {why}. Point "
            f"JAVA_HOME at a JDK {JAVA_MIN}-{JAVA_MAX}, e.g. "
            "`export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64`."
        )
    return major


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the daemons do: otherwise connections in TIME_WAIT, left by a cluster that was just
        # stopped, would count as "in use".
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def check_ports(ports: dict[int, str]) -> None:
    """``ports`` maps port -> "service purpose"; all must be free on 127.0.0.1."""
    busy = [(port, what) for port, what in sorted(ports.items()) if port_in_use(port)]
    if busy:
        listing = ", ".join(f"{port} ({what})" for port, what in busy)
        raise DevClusterError(
            f"Port already in use on 127.0.0.1: {listing}. The devcluster binds fixed ports so "
            "that its addresses are stable. Another Hadoop (or another devcluster in a different "
            "--dir) is probably running: stop it (`tony-jupyter devcluster down --dir ...`), or "
            f"find the owner with `ss -ltnp 'sport = :{busy[0][0]}'` and stop that process."
        )


def free_bytes(path: Path) -> int:
    """Free space on the filesystem holding ``path`` (its nearest existing ancestor)."""
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check_disk(path: Path) -> None:
    free_mb = free_bytes(path) // (1024 * 1024)
    if free_mb < MIN_FREE_MB:
        raise DevClusterError(
            f"Only {free_mb} MB free on the disk holding {path}; the devcluster needs at least "
            f"{MIN_FREE_MB} MB. On a fuller disk the NameNode stays in safe mode and the "
            "NodeManagers mark themselves UNHEALTHY without saying so, so applications sit in "
            "ACCEPTED forever. Free some space, or put the cluster on another disk with "
            "`--dir` (or $TONY_JUPYTER_DEVCLUSTER_DIR)."
        )


def check_same_cluster(root: Path, state: dict, wanted: dict) -> None:
    """A cluster already runs in ``root``, as its ``state`` file says: refuse to go on if it
    runs with another port offset, shape (``hosts``, ``ha``, ``tls``, ``gpus``) or security
    than ``wanted``."""
    running_offset = state.get("port_offset", 0)
    if running_offset != wanted["port_offset"]:
        raise DevClusterError(
            f"The devcluster in {root} is already running with port offset "
            f"{running_offset}, not {wanted['port_offset']}. Use it as it is, or run "
            "`tony-jupyter devcluster down` first to restart it with another offset."
        )
    if bool(state.get("hosts")) != wanted["hosts"]:
        where = "on several hosts" if state.get("hosts") else "on this machine's own host"
        raise _running_otherwise(root, where)
    if wanted.get("hadoop_version") not in (None, state.get("hadoop_version")):
        raise DevClusterError(
            f"The devcluster in {root} is already running Hadoop {state.get('hadoop_version')}, "
            f"not {wanted['hadoop_version']}. Use it as it is, or run `tony-jupyter devcluster "
            "down` first and start the other release in another --dir."
        )
    if bool(state.get("ha")) != bool(wanted.get("ha")):
        raise _running_otherwise(
            root, "with two NameNodes and two RMs (--ha)" if state.get("ha") else "without --ha"
        )
    if bool(state.get("tls")) != wanted["tls"]:
        raise _running_otherwise(
            root, "with TLS (HTTPS only)" if state.get("tls") else "without TLS"
        )
    if bool(state.get("gpus", True)) != bool(wanted.get("gpus", True)):
        raise _running_otherwise(
            root, "with GPUs on nm2" if state.get("gpus", True) else "without GPUs (--no-gpus)"
        )
    if state.get("security") != wanted["security"]:
        running = _describe(state.get("security"))
        raise _running_otherwise(root, f"{running}, not {_describe(wanted['security'])}")


def check_shape(*, hosts: bool, secure: bool, ha: bool) -> None:
    """Refuse the combinations of `up`'s shapes that are not supported yet, before anything."""
    if ha and hosts and secure:
        raise DevClusterError(
            "--secure together with --hosts --ha is not supported yet (the second master host's "
            "principals, nn/master2 and rm/master2, are not made): start `up --hosts --ha` "
            "(with --tls if you like) without --secure, or `up --ha --secure` on this host alone."
        )


def _running_otherwise(root: Path, running: str) -> DevClusterError:
    return DevClusterError(
        f"The devcluster in {root} is already running {running}. Use it as it is, or run "
        "`tony-jupyter devcluster down` first to restart it the other way."
    )


def _describe(security: dict | None) -> str:
    if not security:
        return "without Kerberos"
    return "with Kerberos (" + ", ".join(f"{k}={v}" for k, v in security.items()) + ")"
