"""The job's staging directory on HDFS, through WebHDFS (HdfsCLI's InsecureClient).

``/user/<user>/.tony-jupyter/<application id>/`` (mode 700) holds what the AM and the executors
localize: spec.json, token (600), cell.py, names.pkl, bundle.json, and resources.json, the YARN
local-resource entries (exact size and modificationTime, or the NodeManager refuses them).
"""

from __future__ import annotations

import json
import posixpath

import requests
from hdfs import HdfsError, InsecureClient

from ...errors import BackendError
from .conf import Address

STAGING = ".tony-jupyter"


class Staging:
    def __init__(self, address: Address, user: str, default_fs: str):
        self.address, self.user = address, user
        # WebHDFS paths are absolute; resources given to YARN need the filesystem's URI.
        self.fs = default_fs.rstrip("/") if default_fs.startswith("hdfs://") else ""
        self.client = InsecureClient(address.url, user=user, timeout=30)
        self.root = f"/user/{user}/{STAGING}"

    def job_dir(self, app_id: str) -> str:
        return f"{self.root}/{app_id}"

    def _call(self, what: str, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except requests.RequestException as e:
            raise BackendError(
                f"cannot reach HDFS (WebHDFS) at {self.address}: {type(e).__name__}. Is the "
                "NameNode up (`tony-jupyter devcluster status`)?"
            ) from None
        except HdfsError as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if "Permission denied" in msg or "AccessControlException" in msg:
                raise BackendError(
                    f"HDFS permission denied {what} as user {self.user!r}: {msg}. The staging "
                    f"directory is {self.root}; ask an HDFS admin to create /user/{self.user} "
                    f"owned by {self.user} (hdfs dfs -mkdir -p /user/{self.user} && hdfs dfs "
                    f"-chown {self.user} /user/{self.user}), or set HADOOP_USER_NAME to a user "
                    "that owns a home directory"
                ) from None
            raise BackendError(f"HDFS refused {what}: {msg}") from None

    def check(self) -> None:
        """Create (or confirm) the staging root: the first HDFS write, done before YARN is asked
        for anything, so a permission problem leaves nothing behind."""
        self._call(f"creating {self.root}", self.client.makedirs, self.root, permission="700")

    def upload(self, app_id: str, files: dict[str, bytes], private: tuple[str, ...] = ()) -> dict:
        """Write ``files`` into the job's directory; returns YARN local-resource entries."""
        d = self.job_dir(app_id)
        self._call(f"creating {d}", self.client.makedirs, d, permission="700")
        resources = {}
        for name, data in files.items():
            path = posixpath.join(d, name)
            mode = "600" if name in private else "644"
            self._call(
                f"writing {path}",
                self.client.write,
                path,
                data=data,
                overwrite=True,
                permission=mode,
            )
            st = self._call(f"reading {path}", self.client.status, path)
            resources[name] = {
                "resource": f"{self.fs}{path}",
                "type": "FILE",
                "visibility": "APPLICATION",
                "size": st["length"],
                "timestamp": st["modificationTime"],
            }
        return resources

    def upload_json(self, app_id: str, name: str, obj) -> dict:
        return self.upload(app_id, {name: json.dumps(obj).encode()})[name]

    def exists(self, app_id: str) -> bool:
        return (
            self._call("reading", self.client.status, self.job_dir(app_id), strict=False)
            is not None
        )

    def list_jobs(self) -> list[str]:
        got = self._call("listing", self.client.status, self.root, strict=False)
        return self._call("listing", self.client.list, self.root) if got else []

    def remove(self, app_id: str) -> None:
        d = self.job_dir(app_id)
        self._call(f"deleting {d}", self.client.delete, d, recursive=True)


def local_resource_json(entries: dict[str, dict]) -> dict:
    """The REST submission's ``local-resources`` form."""
    return {"entry": [{"key": k, "value": v} for k, v in entries.items()]}
