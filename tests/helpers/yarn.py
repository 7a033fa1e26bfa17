"""The devcluster from a test's side: REST views of it for assertions (Cluster), and sending a
test's jobs to it (jobs_to_yarn, which afterwards asserts that no application, container or
staging directory of the test is left)."""

from __future__ import annotations

import functools
import getpass
import time

import requests

from helpers.leftovers import LIVE_APP_STATES, wait_cluster_clean
from tony_jupyter.launcher.yarn.rm import APP_TYPE, TERMINAL_APP_STATES

# The contract jobs ask for 512 MB containers so that they fit the devcluster's CPU node
# (6 GB) next to their AM; the code under test is the same.
TEST_MEMORY_MB = 512


class Cluster:
    """REST views of the devcluster for assertions."""

    def __init__(self, dc, user: str):
        env = dc.env()
        self.rm = env["TONY_DEVCLUSTER_RM_URL"]
        self.webhdfs = env["TONY_DEVCLUSTER_WEBHDFS_URL"]
        self.user = user
        # A TLS devcluster's own CA (`up --tls`); the shell's REQUESTS_CA_BUNDLE must not win.
        self.http = requests.Session()
        if env.get("TONY_CA_BUNDLE"):
            self.http.verify, self.http.trust_env = env["TONY_CA_BUNDLE"], False

    def apps(self, name: str | None = None) -> list[dict]:
        r = self.http.get(
            f"{self.rm}/ws/v1/cluster/apps", params={"applicationTypes": APP_TYPE}, timeout=10
        )
        apps = ((r.json().get("apps") or {}).get("app")) or []
        return [a for a in apps if name is None or a["name"] == name]

    def app(self, app_id: str) -> dict:
        return self.http.get(f"{self.rm}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]

    def wait_app_end(self, app_id: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while (app := self.app(app_id))["state"] not in TERMINAL_APP_STATES:
            assert time.monotonic() < deadline, f"{app_id} still {app['state']}"
            time.sleep(0.2)
        return app

    def live_apps(self, name: str | None = None) -> list[dict]:
        return [a for a in self.apps(name) if a["state"] in LIVE_APP_STATES]

    def containers(self, app_id: str) -> list[dict]:
        """Every container of the app's attempts, its sizes as numbers."""
        base = f"{self.rm}/ws/v1/cluster/apps/{app_id}/appattempts"
        attempts = self.http.get(base, timeout=10).json()["appAttempts"]["appAttempt"]
        out = []
        for a in attempts:
            got = self.http.get(f"{base}/{a['appAttemptId']}/containers", timeout=10).json()
            c = (got or {}).get("container") or []
            out += c if isinstance(c, list) else [c]
        for c in out:  # Hadoop 3.3/3.4's REST (Jersey 1) writes these numbers as strings
            for key in ("allocatedMB", "allocatedVCores"):
                if key in c:
                    c[key] = int(c[key])
            for entry in as_entries(c.get("allocatedResources")):
                entry["value"] = int(entry["value"])
        return out

    def staging(self) -> list[str]:
        return [name for name, _ in self.listing(f"/user/{self.user}/.tony-jupyter")]

    def listing(self, path: str) -> list[tuple[str, str]]:
        """(name, FILE or DIRECTORY) of what is in the HDFS directory ``path``; [] if none."""
        r = self.http.get(
            f"{self.webhdfs}/webhdfs/v1{path}",
            params={"op": "LISTSTATUS", "user.name": self.user},
            timeout=10,
        )
        if r.status_code == 404:
            return []
        return [(s["pathSuffix"], s["type"]) for s in r.json()["FileStatuses"]["FileStatus"]]

    def has_file(self, path: str, name: str, depth: int = 3) -> bool:
        """Whether a file ``name`` is under the HDFS directory ``path`` (``depth`` levels)."""
        for entry, kind in self.listing(path):
            if kind == "FILE" and entry == name:
                return True
            if (
                kind == "DIRECTORY"
                and depth > 1
                and self.has_file(f"{path}/{entry}", name, depth - 1)
            ):
                return True
        return False

    def wait_nothing_left(self, app_ids: set[str], timeout: float = 30) -> None:
        """Every app in ``app_ids`` ended, holds no container, and left no staging dir."""
        wait_cluster_clean(self, app_ids, timeout)


def jobs_to_yarn(monkeypatch, yarn_cluster):
    """Generator for a fixture: the test's jobs go to ``yarn_cluster`` (HADOOP_CONF_DIR set makes
    yarn the default backend); afterwards, nothing of them may be left there."""
    for k, v in yarn_cluster.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TONY_YARN_RM_URL", raising=False)
    monkeypatch.delenv("TONY_WEBHDFS_URL", raising=False)
    monkeypatch.delenv("HADOOP_USER_NAME", raising=False)
    from tony_jupyter import options
    from tony_jupyter.core.spec import SpecBuilder

    monkeypatch.setattr(
        options, "SpecBuilder", functools.partial(SpecBuilder, default_memory=TEST_MEMORY_MB)
    )
    cluster = Cluster(yarn_cluster, getpass.getuser())
    before = {a["id"] for a in cluster.apps()}
    yield "yarn"
    ours = {a["id"] for a in cluster.apps()} - before
    cluster.wait_nothing_left(ours)


def as_entries(resources: dict | None) -> list[dict]:
    """A container's ``allocatedResources`` entries (one entry comes as an object)."""
    entry = (resources or {}).get("entry") or []
    return entry if isinstance(entry, list) else [entry]
