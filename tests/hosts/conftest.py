"""Tests marked ``hosts`` need root and make network namespaces (`devcluster up --hosts`); they
run only when asked for (``-m hosts``): dev/test runs them, as root, after its ``not yarn``
partition.

The ``hosts_cluster`` fixture starts one plain several-host cluster for the session, in
``$TONY_JUPYTER_DEVCLUSTER_DIR`` if set (reusing a several-host cluster already running there,
and leaving it running), else in pytest's tmp dir. One for every module that uses it: each node
unpacks the shipped venv once, not once a module. The tests that use it run first, MWMS's first
job first of all (it measures the first upload), then the one that takes it down; then the
modules with clusters of other shapes (Kerberized, TLS, HA: test_hosts_ha.py's `up --hosts --ha
--tls`, or ``TONY_TEST_HOSTS_HA_DIR``'s already up), one at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.hosts import node_python

FIRST = "test_mwms_from_a_kernel_on_the_edge_runs_on_workers_without_its_venv"
LAST = "test_down_removes_every_namespace_link_mount_and_process"  # of the shared cluster


def _order(item: pytest.Item) -> tuple[int, int]:
    name = getattr(item, "originalname", item.name)
    if "hosts_cluster" not in getattr(item, "fixturenames", ()):
        return (2, 0)
    return (1, 0) if name == LAST else (0, 0 if name == FIRST else 1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "hosts" in (config.getoption("markexpr") or ""):
        items.sort(key=_order)  # stable: each group keeps its files' order
        return
    skip = pytest.mark.skip(reason="needs root and network namespaces: run with -m hosts")
    for item in items:
        if "hosts" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def hosts_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    if os.geteuid() != 0:
        pytest.fail("tests marked hosts need root (network namespaces, a bridge, mounts)")
    env_dir = os.environ.get("TONY_JUPYTER_DEVCLUSTER_DIR")
    root = Path(env_dir) if env_dir else tmp_path_factory.mktemp("hosts")
    existing = DevCluster(root)
    # (a Kerberized one is test_hosts_secure.py's: these tests act as root with user.name)
    if existing.hosts is not None and not existing.security and existing.is_running():
        existing.owned = False  # type: ignore[attr-defined]
        yield existing
        return
    cluster = DevCluster(root, hosts=True)
    cluster.up()
    cluster.owned = True  # type: ignore[attr-defined]
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def node_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv on the nodes' own interpreter (nodeenv.py), one for the session: its packed copy
    is uploaded once, by the first job from the edge, and reused by every later one."""
    import nodeenv  # tests/hosts/nodeenv.py

    python = node_python()
    if python is None:
        pytest.fail("the machine has no interpreter of the kernel's version for the nodes")
    return nodeenv.build(tmp_path_factory.mktemp("nodeenv"), python, nodeenv.ROOTS)


HERE = Path(__file__).parent


def exec_argv(cluster: DevCluster, host: str, *argv: str) -> list[str]:
    """``argv`` on ``host`` through `devcluster exec`, as a command line for this machine."""
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", "exec", "--dir", str(cluster.dir)]
    return [*cmd, host, "--", *argv]


def on(
    cluster: DevCluster, host: str, *argv: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``argv`` on ``host`` through `devcluster exec`, output captured."""
    return subprocess.run(
        exec_argv(cluster, host, *argv),
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def on_edge(
    cluster: DevCluster,
    venv: Path,
    notebook: Path,
    script: str,
    *args: str,
    result: str,
    env: dict | None = None,
    timeout: float = 1500,
) -> tuple[subprocess.CompletedProcess, dict]:
    """A kernel's script (``tests/hosts/<script>``, copied into ``notebook`` with the
    edge_kernel.py it imports) run by ``venv``'s Python on the edge host, in ``notebook``, with
    ``TONY_JUPYTER_HOME`` beside it: the process, and the JSON it wrote to ``<result>.json``."""
    notebook.mkdir(parents=True, exist_ok=True)
    for name in (script, "edge_kernel.py"):
        shutil.copy(HERE / name, notebook)
    home = {"TONY_JUPYTER_HOME": str(notebook.parent / "tony-home")}
    res = subprocess.run(
        exec_argv(cluster, "edge", str(venv / "bin" / "python"), script, *args),
        cwd=notebook,
        env={**os.environ, **home, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    path = notebook / f"{result}.json"
    assert res.returncode == 0 and path.exists(), res.stdout[-3000:] + res.stderr[-3000:]
    return res, json.loads(path.read_text())
