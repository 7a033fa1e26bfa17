"""Tests against `devcluster up --secure`: a real MIT KDC and Hadoop's secure mode, with short
delegation-token lifetimes (renewed every 20 s, dead after 60 s) so that a test can outlive
them. Every test acts as alice (her ticket in her own ccache, as after `kinit`); bob is the
other user of the isolation tests. One cluster for the whole run; ``TONY_TEST_SECURE_DIR``
points the suite at a secure devcluster that is already up (developers' runs)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.secure import SecureCluster, as_user
from helpers.yarn import TEST_MEMORY_MB

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.security import Security
from tony_jupyter_devcluster.testing import start_devcluster

SECURITY = Security(token_renew_interval_s=20, token_max_lifetime_s=60)


@pytest.fixture(scope="session")
def secure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    root = os.environ.get("TONY_TEST_SECURE_DIR")
    if root:  # one that is up already, as recorded in its dir
        yield DevCluster(Path(root))
        return
    dc = start_devcluster(tmp_path_factory.mktemp("secure-devcluster"), SECURITY)
    try:
        yield dc
    finally:  # started here: its daemons and KDC stop with the run
        dc.down()


@pytest.fixture(scope="session")
def secure(secure_cluster: DevCluster) -> SecureCluster:
    return SecureCluster(secure_cluster)


@pytest.fixture
def tony_home(tony_home, monkeypatch, secure_cluster, secure):
    """conftest's tony_home, with the test's jobs on the secure devcluster as alice;
    afterwards no application or staging directory of the test may be left."""
    as_user(monkeypatch, secure_cluster, "alice")
    from tony_jupyter import options
    from tony_jupyter.core.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    before = {a["id"] for a in secure.apps()}
    yield tony_home
    secure.wait_nothing_left({a["id"] for a in secure.apps()} - before)
