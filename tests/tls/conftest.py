"""Tests against `devcluster up --tls`: every web endpoint HTTPS only, from the cluster's own CA.

One TLS cluster for the module that asks for it (``tls_cluster``), in pytest's tmp dir on the
first free port offset, so that it runs beside the plain devcluster of the other tests marked
``yarn``; ``TONY_TEST_TLS_DIR`` points the tests at a TLS devcluster that is already up
(developers' runs), which is left running."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.yarn import Cluster, jobs_to_yarn

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.testing import start_devcluster


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    root = os.environ.get("TONY_TEST_TLS_DIR")
    if root:
        dc = DevCluster(Path(root))
        assert dc.layout.tls and dc.is_running(), f"no TLS devcluster runs in {root}"
        yield dc
        return
    dc = start_devcluster(tmp_path_factory.mktemp("tls-devcluster"), tls_on=True)
    try:
        yield dc
    finally:
        dc.down()


@pytest.fixture
def cluster(tls_cluster: DevCluster, tony_home) -> Cluster:
    import getpass

    return Cluster(tls_cluster, getpass.getuser())


@pytest.fixture
def tony_home(tony_home, monkeypatch, tls_cluster):
    """conftest's tony_home, with the test's jobs on the TLS devcluster (its CA bundle in
    TONY_CA_BUNDLE, the shell's REQUESTS_CA_BUNDLE left as it is: the system's, which does not
    hold the cluster's CA); afterwards no application or staging directory may be left."""
    for _ in jobs_to_yarn(monkeypatch, tls_cluster):
        yield tony_home
