"""The secure devcluster from a test's side: REST as alice or bob (SecureCluster), and this
process acting as one of them (as_user)."""

from __future__ import annotations

import time

import pytest

from helpers.leftovers import wait_cluster_clean
from tony_jupyter_devcluster import DevCluster


class SecureCluster:
    """The secure devcluster as a test sees it: REST as alice, bob or the operator."""

    def __init__(self, dc: DevCluster):
        self.dc = dc
        self.rm, self.webhdfs = dc.rm_url, dc.webhdfs_url
        self.alice, self.bob = dc.session("alice"), dc.session("bob")

    def app(self, app_id: str, as_user: str = "alice") -> dict:
        http = self.alice if as_user == "alice" else self.bob
        return http.get(f"{self.rm}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]

    def wait_app_end(self, app_id: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while (app := self.app(app_id))["finalStatus"] == "UNDEFINED":
            assert time.monotonic() < deadline, f"{app_id} still {app['state']}"
            time.sleep(0.3)
        return app

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
        wait_cluster_clean(self, app_ids, timeout)


def as_user(monkeypatch: pytest.MonkeyPatch, dc: DevCluster, user: str) -> None:
    """This process's environment as `eval "$(devcluster env --user USER)"` leaves a shell."""
    for k, v in dc.env(user).items():
        monkeypatch.setenv(k, v)
    for k in ("TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_USER_NAME"):
        monkeypatch.delenv(k, raising=False)
    for k in ("TONY_KERBEROS_PRINCIPAL", "TONY_KERBEROS_KEYTAB"):
        monkeypatch.delenv(k, raising=False)
