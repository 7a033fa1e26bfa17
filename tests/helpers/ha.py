"""An HA devcluster from a test's side: the REST views of helpers.yarn and helpers.secure
through whichever ResourceManager and NameNode is active at each call, so that they keep working
across a failover."""

from __future__ import annotations

from helpers.secure import SecureCluster
from helpers.yarn import Cluster
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
