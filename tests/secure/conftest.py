"""Tests against `devcluster up --secure`: a real MIT KDC and Hadoop's secure mode, with short
delegation-token lifetimes (renewed every 20 s, dead after 60 s) so that a test can outlive
them. Every test acts as alice (her ticket in her own ccache, as after `kinit`); bob is the
other user of the isolation tests. One cluster for the whole run; ``TONY_TEST_SECURE_DIR``
points the suite at a secure devcluster that is already up (developers' runs)."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.yarn import TEST_MEMORY_MB

from tony_jupyter.devcluster import DevCluster
from tony_jupyter.devcluster.security import Security
from tony_jupyter.devcluster.testing import start_devcluster, started_by_fixture

SECURITY = Security(token_renew_interval_s=20, token_max_lifetime_s=60)
LIVE = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHING")


@pytest.fixture(scope="session")
def secure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    root = os.environ.get("TONY_TEST_SECURE_DIR")
    if root:  # one that is up already, as recorded in its dir
        yield DevCluster(Path(root))
        return
    dc = start_devcluster(tmp_path_factory.mktemp("secure-devcluster"), SECURITY)
    try:
        yield dc
    finally:
        if started_by_fixture(dc):
            dc.down()


class SecureCluster:
    """The secure devcluster as a test sees it: REST as alice, bob or the operator."""

    def __init__(self, dc: DevCluster):
        self.dc = dc
        self.rm, self.webhdfs = dc.rm_url, dc.webhdfs_url
        self.alice, self.bob = dc.session("alice"), dc.session("bob")

    def app(self, app_id: str, as_user: str = "alice") -> dict:
        http = self.alice if as_user == "alice" else self.bob
        return http.get(f"{self.rm}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]

    def apps(self) -> list[dict]:
        got = self.alice.get(
            f"{self.rm}/ws/v1/cluster/apps",
            params={"applicationTypes": "TONY-JUPYTER", "user": "alice"},
            timeout=10,
        ).json()
        apps = (got.get("apps") or {}).get("app") or []
        return apps if isinstance(apps, list) else [apps]

    def staging(self) -> list[str]:
        r = self.alice.get(
            f"{self.webhdfs}/webhdfs/v1/user/alice/.tony-jupyter",
            params={"op": "LISTSTATUS"},
            timeout=10,
        )
        if r.status_code == 404:
            return []
        return [s["pathSuffix"] for s in r.json()["FileStatuses"]["FileStatus"]]

    def wait_nothing_left(self, app_ids: set[str], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            live = [a["id"] for a in self.apps() if a["id"] in app_ids and a["state"] in LIVE]
            staged = [d for d in self.staging() if d in app_ids]
            if not live and not staged:
                return
            assert time.monotonic() < deadline, f"left behind: apps {live}, staging {staged}"
            time.sleep(0.3)


@pytest.fixture(scope="session")
def secure(secure_cluster: DevCluster) -> SecureCluster:
    return SecureCluster(secure_cluster)


def as_user(monkeypatch: pytest.MonkeyPatch, dc: DevCluster, user: str) -> None:
    """This process's environment as `eval "$(devcluster env --user USER)"` leaves a shell."""
    for k, v in dc.env(user).items():
        monkeypatch.setenv(k, v)
    for k in ("TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_USER_NAME"):
        monkeypatch.delenv(k, raising=False)
    for k in ("TONY_KERBEROS_PRINCIPAL", "TONY_KERBEROS_KEYTAB"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def tony_home(tony_home, monkeypatch, secure_cluster, secure):
    """conftest's tony_home, with the test's jobs on the secure devcluster as alice;
    afterwards no application or staging directory of the test may be left."""
    as_user(monkeypatch, secure_cluster, "alice")
    from tony_jupyter import options
    from tony_jupyter.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    before = {a["id"] for a in secure.apps()}
    yield tony_home
    secure.wait_nothing_left({a["id"] for a in secure.apps()} - before)
