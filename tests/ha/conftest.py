"""Tests marked ``ha`` run against `devcluster up --ha` (two NameNodes, two ResourceManagers,
ZooKeeper); they run only when asked for (``-m ha``), serially, since they kill masters.

One HA cluster for the module that asks for it (``ha_cluster``), first over HTTP, then HTTPS
only (`up --ha --tls`), in pytest's tmp dir on the first free port offset, beside the plain
devcluster of the tests marked ``yarn``; ``TONY_TEST_HA_DIR`` points the tests at an HA
devcluster already up (developers' runs: the shape it is), which is left running. Here, for the
modules of tests/ha: ``cluster`` (its REST views) and ``tony_home`` (the test's jobs on it).

The Kerberized shape (`up --ha --secure`) is a package of its own, tests/ha/secure/, with its
own cluster and its own ``tony_home``: one chained to this one would start ``ha_cluster`` and
send the test's jobs there."""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator

import pytest
from helpers.ha import FollowingCluster, jobs_to_ha, module_cluster

from tony_jupyter_devcluster import DevCluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if re.search(r"\bha\b", config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="kills the masters of its own HA devcluster: run with -m ha")
    for item in items:
        if "ha" in item.keywords:
            item.add_marker(skip)


# Each test runs on both shapes: plain HTTP, and HTTPS only (`up --ha --tls`), where every
# master of a pair is found and followed at its HTTPS address, verified against the CA.
SHAPES = {"http": False, "tls": True}


@pytest.fixture(scope="session", params=list(SHAPES))
def ha_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevCluster]:
    tls_on = SHAPES[request.param]

    def unlike(dc: DevCluster) -> str:
        other = dc.layout.tls != tls_on or dc.security is not None
        return f"the {request.param} one" if other else ""

    yield from module_cluster(tmp_path_factory, "ha-devcluster", unlike, tls_on=tls_on)


@pytest.fixture
def cluster(ha_cluster: DevCluster, tony_home) -> FollowingCluster:
    return FollowingCluster(ha_cluster, getpass.getuser())


@pytest.fixture
def tony_home(tony_home, monkeypatch, ha_cluster):
    """conftest's tony_home, with the test's jobs on the HA devcluster (helpers/ha.py)."""
    for _ in jobs_to_ha(monkeypatch, ha_cluster):
        yield tony_home
