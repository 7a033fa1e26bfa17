"""An HA devcluster from a test's side: the REST views of helpers.yarn and helpers.secure
through whichever ResourceManager and NameNode is active at each call, so that they keep working
across a failover."""

from __future__ import annotations

import functools
import getpass

from helpers.secure import SecureCluster
from helpers.yarn import TEST_MEMORY_MB, Cluster
from tony_jupyter.devcluster import DevCluster


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
    from tony_jupyter.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    view = FollowingCluster(ha_cluster, getpass.getuser())
    before = {a["id"] for a in view.apps()}
    yield "yarn"
    view.wait_nothing_left({a["id"] for a in view.apps()} - before)
