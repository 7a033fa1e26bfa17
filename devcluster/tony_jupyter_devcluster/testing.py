"""pytest plugin: a session-scoped ``devcluster`` fixture for tests marked ``yarn``.

Enable with ``pytest_plugins = ["tony_jupyter_devcluster.testing"]``. Only tests that request
the fixture pay for the cluster. It runs in ``$TONY_JUPYTER_DEVCLUSTER_DIR`` if set, else in
pytest's tmp dir; a devcluster already running there (or, with the variable unset, in the default
dir) is reused and left running, unless it is a secure, TLS, HA or GPU-less one. Without Java the
fixture skips, except under CI (``CI`` set), where a missing Java is a broken runner and fails.

Secure clusters (``up --secure``) come from :func:`start_devcluster`, in a test module's own
fixture, since each module may want its own token lifetimes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import kerberos, preflight
from .cluster import DevCluster
from .config import MAX_PORT_OFFSET, Layout
from .errors import DevClusterError
from .security import Security

# A cluster's ports span under 2,500 (8020 to 10170 plus TLS's): xdist processes given one
# $TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET take it this far apart.
XDIST_STRIDE = 2500

_started: set[Path] = set()


def _java_problem() -> str | None:
    try:
        preflight.check_java(preflight.find_java_home())
    except DevClusterError as err:
        return str(err)
    return None


def _require(problem: str | None, what: str) -> None:
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"devcluster needs {what} (CI is set, so this is not skipped): {problem}")
        pytest.skip(f"devcluster needs {what}: {problem}")


@pytest.fixture(scope="session")
def devcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A running devcluster for the whole session (started once, stopped at the end)."""
    _require(_java_problem(), "Java")
    env_dir = os.environ.get("TONY_JUPYTER_DEVCLUSTER_DIR")
    # With the variable unset, reuse a cluster started by hand in the default dir: no start-up.
    existing = DevCluster(Path(env_dir)) if env_dir else DevCluster()
    shape = existing.layout
    plain = existing.security is None and not (shape.tls or shape.ha or not shape.gpus)
    if existing.is_running() and plain:
        yield existing
        return
    root = existing.dir if env_dir else tmp_path_factory.mktemp("devcluster")
    cluster = start_devcluster(root)
    _started.add(cluster.dir)
    try:
        yield cluster
    finally:
        _started.discard(cluster.dir)
        cluster.down()


def start_devcluster(
    root: Path,
    security: Security | None = None,
    tls_on: bool = False,
    ha: bool = False,
    gpus: bool = True,
) -> DevCluster:
    """`up` in ``root`` on the first port offset that is free; the caller calls `down`.

    ``tls_on``: HTTPS only (`up --tls`); ``ha``: two NameNodes and two RMs (`up --ha`);
    ``gpus`` False: no node offers yarn.io/gpu (`up --no-gpus`). With
    ``security``, a secure cluster, or a skip (a failure under CI) where this machine has no
    Java or no MIT Kerberos tools."""
    _require(_java_problem(), "Java")
    if security is not None:
        _require(_kerberos_problem(), "MIT Kerberos")
    for attempt in range(3):
        offset = _free_port_offset(root, security is not None, tls_on, ha, gpus)
        cluster = DevCluster(root, offset, security or False, tls_on=tls_on, ha=ha, gpus=gpus)
        try:
            cluster.up()
            return cluster
        except DevClusterError:
            # Another session may have taken the ports between the check and the daemons'
            # bind; `up` stopped ours, so a busy port now is theirs: try the next offset.
            ports = cluster.layout.all_ports()
            if attempt == 2 or not any(preflight.port_in_use(port) for port in ports):
                raise
    raise AssertionError("unreachable")


def _kerberos_problem() -> str | None:
    try:
        kerberos.check_tools()
    except DevClusterError as err:
        return str(err)
    return None


def _free_port_offset(
    root: Path, secure: bool = False, tls_on: bool = False, ha: bool = False, gpus: bool = True
) -> int:
    """$TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET if set (for the plain cluster: a secure, TLS or
    GPU-less one runs beside it), plus XDIST_STRIDE for each pytest-xdist process before this
    one (each starts a cluster of its own); else the first offset whose ports are all free, so
    that a cluster someone else runs on this machine does not fail the session."""
    plain = gpus and not (secure or tls_on or ha)
    if "TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET" in os.environ and plain:
        return int(os.environ["TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET"]) + XDIST_STRIDE * _worker()
    # Below the kernel's ephemeral range first (a port in it may be taken, between the check
    # and the bind, by any client's outgoing connection): the ports span under 10000, so 5000
    # and 15000 fit between the round offsets; each is checked free all the same.
    top = max(Layout(root, 0, secure, tls=tls_on, ha=ha).all_ports())
    steps = (0, 10000, 20000, 5000, 15000, *range(30000, MAX_PORT_OFFSET + 1, 10000))
    offsets = sorted(steps, key=lambda o: o + top >= _ephemeral_low())  # stable: order kept
    for offset in _this_workers_first(offsets):
        ports = Layout(root, offset, secure, tls=tls_on, ha=ha).all_ports()
        if not any(preflight.port_in_use(port) for port in ports):
            return offset
    return 0  # all taken: `up` names the busy ports


def _worker() -> int:
    """This pytest-xdist process's index (gw0: 0, gw1: 1, ...); 0 outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker[2:].isdigit() else 0


def _this_workers_first(offsets: list[int]) -> list[int]:
    """``offsets``, those of this pytest-xdist process first (every n-th from its index), so
    that the partition's processes, starting clusters at the same moment, never pick the same
    free offset; outside xdist, as they are."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if count <= 1 or not worker[2:].isdigit():
        return offsets
    mine = offsets[int(worker[2:]) % count :: count]
    return mine + [o for o in offsets if o not in mine]


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out to outgoing connections (Linux's default: 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def started_by_fixture(cluster: DevCluster) -> bool:
    """Whether the ``devcluster`` fixture started ``cluster`` (and so may stop and restart it)."""
    return cluster.dir in _started
