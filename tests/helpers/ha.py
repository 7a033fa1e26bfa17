"""An HA devcluster from a test's side: the REST views of helpers.yarn and helpers.secure
through whichever ResourceManager and NameNode is active at each call, so that they keep working
across a failover."""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from helpers.secure import SecureCluster
from helpers.yarn import TEST_MEMORY_MB, Cluster
from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.testing import start_devcluster


class _Following:
    dc: DevCluster

    @property
    def rm(self) -> str:
        return self.dc.rm_url

    @rm.setter
    def rm(self, _url: str) -> None:
        pass

    @property
    def webhdfs(self) -> str:
        return self.dc.webhdfs_url

    @webhdfs.setter
    def webhdfs(self, _url: str) -> None:
        pass


class FollowingCluster(_Following, Cluster):
    """:class:`Cluster` (as the operator, ``user.name``) of an HA devcluster without Kerberos."""

    def __init__(self, dc: DevCluster, user: str):
        self.dc = dc
        super().__init__(dc, user)


class FollowingSecureCluster(_Following, SecureCluster):
    """:class:`SecureCluster` (as alice or bob, with SPNEGO) of an `up --ha --secure` one."""

    def __init__(self, dc: DevCluster):
        self.dc = dc
        super().__init__(dc)


def jobs_to_ha(monkeypatch, ha_cluster: DevCluster):
    """Generator for a ``tony_home`` fixture: the test's jobs go to ``ha_cluster`` through its HA
    client configuration (HADOOP_CONF_DIR: both masters of each pair, no single address);
    afterwards no application or staging directory of the test may be left."""
    for k, v in ha_cluster.env().items():
        monkeypatch.setenv(k, v)
    for name in ("TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_USER_NAME"):
        monkeypatch.delenv(name, raising=False)
    from tony_jupyter import options
    from tony_jupyter.core.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    view = FollowingCluster(ha_cluster, getpass.getuser())
    before = {a["id"] for a in view.apps()}
    yield "yarn"
    view.wait_nothing_left({a["id"] for a in view.apps()} - before)


def module_cluster(
    factory: pytest.TempPathFactory, name: str, unlike: Callable[[DevCluster], str], **shape
) -> Iterator[DevCluster]:
    """A module's HA devcluster of ``shape`` (start_devcluster's keywords), up in pytest's tmp
    dir and down after, with nothing of it left running; or ``TONY_TEST_HA_DIR``'s, left
    running, and a skip where ``unlike(dc)`` says how it is another shape."""
    root = os.environ.get("TONY_TEST_HA_DIR")
    if root:
        dc = DevCluster(Path(root))
        assert dc.layout.ha and dc.is_running(), f"no HA devcluster runs in {root}"
        other = unlike(dc)
        if other:
            pytest.skip(f"the HA devcluster in {root} is not {other}")
        yield dc
        return
    dc = start_devcluster(factory.mktemp(name), ha=True, **shape)
    try:
        yield dc
    finally:
        dc.down()
    # `down` stops the pairs, ZooKeeper (and a KDC): nothing names the dir any more.
    left = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(dc.dir) in " ".join(p.info["cmdline"] or [])
    ]
    assert not left, f"left running after down: {left}"
