"""Tests marked ``ha`` run against `devcluster up --ha` (two NameNodes, two ResourceManagers,
ZooKeeper); they run only when asked for (``-m ha``), serially, since they kill masters.

One HA cluster for every module here (``ha_cluster``, package-scoped: pytest runs each
shape's tests together, so each shape's cluster starts once), first over HTTP, then HTTPS only
(`up --ha --tls`), in pytest's tmp dir on the first free port offset, beside the plain
devcluster of the tests marked ``yarn``; ``TONY_TEST_HA_DIR`` points the tests at an HA
devcluster already up (developers' runs: the shape it is), which is left running."""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from helpers.yarn import TEST_MEMORY_MB, Cluster

from tony_jupyter.devcluster import DevCluster
from tony_jupyter.devcluster.testing import start_devcluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "ha" in (config.getoption("markexpr") or "").split():
        return
    skip = pytest.mark.skip(reason="kills the masters of its own HA devcluster: run with -m ha")
    for item in items:
        if "ha" in item.keywords:
            item.add_marker(skip)


# Each test runs on both shapes: plain HTTP, and HTTPS only (`up --ha --tls`), where every
# master of a pair is found and followed at its HTTPS address, verified against the CA.
SHAPES = {"http": False, "tls": True}


@pytest.fixture(scope="package", params=list(SHAPES))
def ha_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevCluster]:
    tls_on = SHAPES[request.param]
    root = os.environ.get("TONY_TEST_HA_DIR")
    if root:
        dc = DevCluster(Path(root))
        assert dc.layout.ha and dc.is_running(), f"no HA devcluster runs in {root}"
        if dc.layout.tls != tls_on:
            pytest.skip(f"the HA devcluster in {root} is not the {request.param} one")
        yield dc
        return
    dc = start_devcluster(tmp_path_factory.mktemp("ha-devcluster"), tls_on=tls_on, ha=True)
    try:
        yield dc
    finally:
        dc.down()
    # `down` stops every daemon of the pairs, ZooKeeper included: none names the dir any more.
    left = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(dc.dir) in " ".join(p.info["cmdline"] or [])
    ]
    assert not left, f"left running after down: {left}"


class FollowingCluster(Cluster):
    """:class:`Cluster`'s REST views through whichever RM and NameNode is active at each call,
    so that they keep working across a failover."""

    def __init__(self, dc: DevCluster, user: str):
        self.dc = dc
        super().__init__(dc, user)

    @property  # type: ignore[override]
    def rm(self) -> str:
        return self.dc.rm_url

    @rm.setter
    def rm(self, _url: str) -> None:
        pass

    @property  # type: ignore[override]
    def webhdfs(self) -> str:
        return self.dc.webhdfs_url

    @webhdfs.setter
    def webhdfs(self, _url: str) -> None:
        pass


@pytest.fixture
def cluster(ha_cluster: DevCluster, tony_home) -> FollowingCluster:
    return FollowingCluster(ha_cluster, getpass.getuser())


@pytest.fixture
def tony_home(tony_home, monkeypatch, ha_cluster):
    """conftest's tony_home, with the test's jobs on the HA devcluster through its HA client
    configuration (HADOOP_CONF_DIR: both masters of each pair, no single address); afterwards
    no application or staging directory of the test may be left."""
    for k, v in ha_cluster.env().items():
        monkeypatch.setenv(k, v)
    for name in ("TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_USER_NAME"):
        monkeypatch.delenv(name, raising=False)
    from tony_jupyter import options
    from tony_jupyter.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    view = FollowingCluster(ha_cluster, getpass.getuser())
    before = {a["id"] for a in view.apps()}
    yield tony_home
    view.wait_nothing_left({a["id"] for a in view.apps()} - before)
