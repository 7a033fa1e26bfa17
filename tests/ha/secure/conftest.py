"""The Kerberized HA shape (`devcluster up --ha --secure`): both pairs of masters Kerberized,
one cluster for the package, of its own, with short delegation-token lifetimes (dead after 60 s)
so that a job outlives them; ``TONY_TEST_HA_DIR`` points it at an `up --ha --secure` devcluster
already up instead (started with the same lifetimes: ``--token-renew-interval 60
--token-max-lifetime 60``).

Renewal is due at the max date too, not sooner: a token due for renewal while the RMs fail over
(11-18 s here from the kill to the new active's recovery) expires before the new active renews
it, and with it the AM's last HDFS call (its staging directory's removal). Real clusters renew
daily. A cluster started with a renew interval of 30 s or less (TONY_TEST_HA_DIR) has the
NameNode test check the RM's renewals after the kill as well.

A package of its own, so that its ``tony_home`` is not chained to tests/ha/conftest.py's, which
would start the plain HA cluster (``ha_cluster``, both of its shapes) and send the test's jobs
there: this one starts from a private TONY_JUPYTER_HOME as the suite's does, then points the
test's jobs at the Kerberized cluster as alice."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
from helpers.ha import FollowingSecureCluster, module_cluster
from helpers.jobs import private_home
from helpers.secure import as_user
from helpers.yarn import TEST_MEMORY_MB

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.security import Security

SECURITY = Security(token_renew_interval_s=60, token_max_lifetime_s=60)


@pytest.fixture(scope="package")
def hasec_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    def unlike(dc: DevCluster) -> str:
        return "the Kerberized one" if dc.security is None else ""

    yield from module_cluster(tmp_path_factory, "ha-secure-devcluster", unlike, security=SECURITY)


@pytest.fixture(scope="package")
def hasec(hasec_cluster: DevCluster) -> FollowingSecureCluster:
    return FollowingSecureCluster(hasec_cluster)


@pytest.fixture
def tony_home(request, tmp_path, monkeypatch, hasec_cluster, hasec):
    """A private TONY_JUPYTER_HOME (as the suite's tony_home), with the test's jobs on the
    Kerberized HA devcluster as alice (her ticket, its HA client configuration); afterwards no
    application, staging directory or process of the test may be left."""
    assert "ha_cluster" not in request.fixturenames, (
        "a test of tests/ha/secure asks for the plain HA cluster (ha_cluster)"
    )
    for home in private_home(tmp_path, monkeypatch):
        as_user(monkeypatch, hasec_cluster, "alice")
        from tony_jupyter import options
        from tony_jupyter.core.spec import SpecBuilder

        monkeypatch.setattr(
            options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
        )
        before = {a["id"] for a in hasec.apps()}
        yield home
        hasec.wait_nothing_left({a["id"] for a in hasec.apps()} - before)
