"""The job's staging directory on HDFS, through WebHDFS (HdfsCLI's InsecureClient).

``/user/<user>/.tony-jupyter/<application id>/`` (mode 700) holds what the AM and the executors
localize: spec.json, token (600), cell.py, names.pkl, bundle.json, and resources.json, the YARN
local-resource entries (exact size and modificationTime, or the NodeManager refuses them).
``/user/<user>/.tony-jupyter/envs/`` caches the ``--pack-env`` archives (packenv.py), ``src/``
the directories shipped with jobs (srcdir.py), each under its content hash, used only while it
is what this host uploaded there (uploads.py).
"""

from __future__ import annotations

import json
import os
import posixpath
import secrets
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from hdfs import Client, HdfsError, InsecureClient
from hdfs.client import _Request

from ...core import srcdir
from ...core.errors import BackendError
from ...core.hadoopconf import Address
from ...core.srcdir import SrcDir
from ...core.tokens import HDFS_KIND, Token
from . import transport, uploads

STAGING = ".tony-jupyter"
ENVS = "envs"  # --pack-env archives, one per content hash, kept across jobs
PYTHONS = "pythons"  # venvs' base interpreters (interpreter.py), one per content hash
SRCS = "src"  # shipped directories (srcdir.py), one per content hash, kept across jobs
UPLOAD_THREADS = 8


class _TokenOps(Client):
    """HdfsCLI's client with the delegation-token operations it has no method for, declared
    the way HdfsCLI declares its own, so they fail over between an HA pair's NameNodes (its
    ``;``-separated URL: a StandbyException or a refused connection moves to the next)."""

    _getdelegationtoken = _Request("GET")
    _renewdelegationtoken = _Request("PUT")


class Staging:
    def __init__(self, address: Address, user: str, default_fs: str, auth=None):
        self.address, self.user = address, user
        # WebHDFS paths are absolute; resources given to YARN need the filesystem's URI.
        self.fs = default_fs.rstrip("/") if default_fs.startswith("hdfs://") else ""
        self.http = transport.session(auth)
        url = ";".join(address.urls)
        if auth is None:
            self.client: Client = InsecureClient(url, user=user, timeout=30, session=self.http)
        else:  # a secure cluster: SPNEGO as the user's principal
            self.client = _TokenOps(url, session=self.http, timeout=30)
        self.root = f"/user/{user}/{STAGING}"

    def delegation_token(self, renewer: str, service: str = "") -> str:
        """An HDFS delegation token (urlString) for the job's containers, renewable by the RM
        (``renewer``), labelled for Hadoop's RPC client (tokens.py); from an HA pair, the
        active NameNode's, under ``service`` (the nameservice's ``ha-hdfs:<ns>``) where given
        instead of that NameNode's address."""
        ops = _TokenOps(";".join(self.address.urls), session=self.http, timeout=30)
        try:
            r = ops._getdelegationtoken("/", renewer=renewer)
        except (requests.RequestException, HdfsError) as e:
            why = (
                transport.describe(e, self.address.urls[-1], self.http.verify)
                if isinstance(e, requests.RequestException)
                else (str(e).splitlines() or [type(e).__name__])[0]
            )
            raise BackendError(
                f"could not get an HDFS delegation token from {self.address}: {why}"
            ) from None
        if not (r.json() or {}).get("Token"):
            raise BackendError(
                f"could not get an HDFS delegation token from {self.address}: {r.text[:300]}"
            )
        token = Token.decode(r.json()["Token"]["urlString"])
        return token.relabel(HDFS_KIND, service or None).encode()

    def renew_token(self, url_string: str) -> float:
        """Renew a token whose renewer is this client's user; its new expiry (epoch s)."""
        ops = _TokenOps(";".join(self.address.urls), session=self.http, timeout=30)
        r = self._call(
            "renewing a delegation token", ops._renewdelegationtoken, "/", token=url_string
        )
        return int(r.json()["long"]) / 1000

    def job_dir(self, app_id: str) -> str:
        return f"{self.root}/{app_id}"

    def _call(self, what: str, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except requests.RequestException as e:
            why = transport.describe(e, self.address.urls[-1], self.http.verify)
            raise BackendError(
                f"cannot reach HDFS (WebHDFS) at {self.address}: {why}. Is the "
                "NameNode up (`tony-jupyter devcluster status`)?"
            ) from None
        except HdfsError as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if getattr(e, "exception", None) in ("StandbyException", "RetriableException"):
                raise BackendError(
                    f"no active NameNode for {what}: {' and '.join(self.address.urls)} answered "
                    f"as standby (from {self.address.source}). Is a failover under way? Try "
                    "again in a minute, or ask the cluster's administrators which is active"
                ) from None
            if "Permission denied" in msg or "AccessControlException" in msg:
                raise BackendError(
                    f"HDFS permission denied {what} as user {self.user!r}: {msg}. The staging "
                    f"directory is {self.root}; ask an HDFS admin to create /user/{self.user} "
                    f"owned by {self.user} (hdfs dfs -mkdir -p /user/{self.user} && hdfs dfs "
                    f"-chown {self.user} /user/{self.user}), or set HADOOP_USER_NAME to a user "
                    "that owns a home directory"
                ) from None
            if "minReplication nodes" in msg:
                # HDFS's word for "no DataNode could take a block": most often every DataNode
                # is out of room (below dfs.datanode.du.reserved, or its disk full).
                raise BackendError(
                    f"HDFS refused {what}: {msg} No DataNode could take the block: most often "
                    "their disks are full (the NameNode's web UI lists each one's remaining "
                    "space, `hdfs dfsadmin -report` too). Free space on the DataNodes, or ask "
                    "the cluster's administrators to"
                ) from None
            raise BackendError(f"HDFS refused {what}: {msg}") from None

    def check(self) -> None:
        """Create (or confirm) the staging root: the first HDFS write, done before YARN is asked
        for anything, so a permission problem leaves nothing behind."""
        self._call(f"creating {self.root}", self.client.makedirs, self.root, permission="700")

    def round_trip(self, size: int = 1024) -> str:
        """A file of ``size`` random bytes written under the root, read back and removed (what a
        job's staging needs of the NameNode and a DataNode): its path, or an error."""
        path = f"{self.root}/.doctor-{secrets.token_hex(4)}"
        data = secrets.token_bytes(size)
        try:
            self._call(f"writing {path}", self.client.write, path, data=data, overwrite=True)
            with self._call(f"reading {path}", self.client.read, path) as r:
                back = r.read()
        finally:
            self._call(f"removing {path}", self.client.delete, path)
        if back != data:
            raise OSError(f"{path} read back differently than written: a DataNode is unwell")
        return path

    def upload(self, app_id: str, files: dict[str, bytes], private: tuple[str, ...] = ()) -> dict:
        """Write ``files`` into the job's directory; returns YARN local-resource entries."""
        d = self.job_dir(app_id)
        self._call(f"creating {d}", self.client.makedirs, d, permission="700")

        def write(name: str) -> tuple[str, dict]:
            path = posixpath.join(d, name)
            mode = "600" if name in private else "644"
            self._call(
                f"writing {path}",
                self.client.write,
                path,
                data=files[name],
                overwrite=True,
                permission=mode,
            )
            st = self._call(f"reading {path}", self.client.status, path)
            return name, {
                "resource": f"{self.fs}{path}",
                "type": "FILE",
                "visibility": "APPLICATION",
                "size": st["length"],
                "timestamp": st["modificationTime"],
            }

        # Each file is three round trips (NameNode, DataNode, status): side by side, not in turn;
        # in turn with SPNEGO, whose auth handler keeps per-host state that is not thread-safe.
        threads = UPLOAD_THREADS if self.http.auth is None else 1
        with ThreadPoolExecutor(min(threads, max(1, len(files)))) as pool:
            return dict(pool.map(write, files))

    def env_archive(self, prefix: Path) -> tuple[dict, dict]:
        """The venv at ``prefix`` as a YARN ARCHIVE entry, packed and uploaded only if its
        content hash is not cached yet; and what it took: {hash, path, bytes_uploaded, seconds}.
        """
        from . import envcache, packenv

        digest = packenv.content_hash(prefix)

        def pack(local: Path) -> bool:
            if envcache.fetch(digest, local):  # packed before, for another cluster
                return True
            packenv.pack(prefix, local)
            envcache.keep(digest, local)
            return False

        # PRIVATE: a NodeManager keeps the unpacked env for this user's later jobs too.
        return self._archive(ENVS, digest, pack, "PRIVATE")

    def python_archive(self, prefix: Path) -> tuple[dict, dict]:
        """The base interpreter at ``prefix`` (interpreter.py) as a YARN ARCHIVE entry, packed
        and uploaded only if its content hash is not there yet."""
        from . import envcache, interpreter, packenv

        digest = interpreter.content_hash(prefix)

        def pack(local: Path) -> bool:
            if envcache.fetch(digest, local, envcache.PYTHONS):  # packed before, elsewhere
                return True
            tar = local.with_name(local.name + ".tar")
            try:
                interpreter.pack(prefix, tar)
                packenv.gzip_in_parallel(tar, local)
            finally:
                tar.unlink(missing_ok=True)
            envcache.keep(digest, local, envcache.PYTHONS)
            return False

        return self._archive(PYTHONS, digest, pack, "PRIVATE")

    def src_archive(self, src: SrcDir) -> tuple[dict, dict]:
        """The shipped directory (srcdir.py) as a YARN ARCHIVE entry, uploaded once per content
        hash. APPLICATION visibility: each job unpacks its own copy, which its tasks may write
        in, and the NodeManager removes it with the application."""

        def pack(local: Path) -> bool:
            local.write_bytes(srcdir.archive(src))
            return False

        return self._archive(SRCS, src.digest, pack, "APPLICATION")

    def _archive(self, kind: str, digest: str, pack, visibility: str) -> tuple[dict, dict]:
        t0 = time.time()
        d = f"{self.root}/{kind}"
        path = f"{d}/{digest}.tar.gz"
        st = self._call(f"reading {path}", self.client.status, path, strict=False)
        uploaded, pack_s, upload_s, from_local = 0, 0.0, 0.0, False
        replaced = self._not_ours(path, st) if st is not None else None
        if replaced is not None:  # used by no job of ours from now: a fresh upload replaces it
            print(f"tony-jupyter: {replaced}: uploading it again", file=sys.stderr, flush=True)
            self._call(f"deleting {path}", self.client.delete, path)
            st = None
        if st is None:
            self._call(f"creating {d}", self.client.makedirs, d, permission="700")
            with tempfile.TemporaryDirectory(prefix=f"tony-{kind}-") as tmp:
                local = Path(tmp) / "archive.tar.gz"
                t_pack = time.time()
                from_local = pack(local)
                pack_s = time.time() - t_pack
                uploaded = os.path.getsize(local)
                # Written under a temporary name, then renamed: a job never localizes a half
                # upload, and two kernels packing the same env at once both end up fine.
                part = f"{d}/.{digest}.{secrets.token_hex(4)}.part"
                try:
                    t_up = time.time()
                    self._call(
                        f"writing {part}", self.client.upload, part, str(local), permission="600"
                    )
                    upload_s = time.time() - t_up
                    if self._call(f"reading {path}", self.client.status, path, strict=False):
                        uploaded = 0  # someone else's upload won; ours is thrown away
                    else:
                        self._call(f"renaming {part}", self.client.rename, part, path)
                        self._record(path)
                finally:
                    try:
                        self.client.delete(part)
                    except Exception:  # noqa: BLE001 - best effort
                        pass
            st = self._call(f"reading {path}", self.client.status, path)
        entry = {
            "resource": f"{self.fs}{path}",
            "type": "ARCHIVE",
            "visibility": visibility,
            "size": st["length"],
            "timestamp": st["modificationTime"],
        }
        info = {
            "hash": digest,
            "path": path,
            "bytes_uploaded": uploaded,
            "seconds": round(time.time() - t0, 3),
            "pack_s": round(pack_s, 3),
            "upload_s": round(upload_s, 3),
        }
        if from_local:  # not packed: the archive this host kept (envcache.py)
            info["local_cache"] = True
        if replaced is not None:
            info["replaced"] = replaced
        return entry, info

    def _upload_key(self, path: str) -> str:
        return f"{self.fs or ';'.join(self.address.urls)}{path}"

    def _described(self, path: str, st: dict) -> uploads.Upload:
        """``path`` as HDFS describes it: its status ``st`` and its checksum."""
        try:
            checksum = self.client.checksum(path)
        except (HdfsError, requests.RequestException, ValueError, KeyError):
            checksum = None  # a filesystem without checksums: length and time only
        return uploads.Upload(int(st["length"]), int(st["modificationTime"]), checksum)

    def _record(self, path: str) -> None:
        st = self._call(f"reading {path}", self.client.status, path)
        uploads.record(self._upload_key(path), self._described(path, st))

    def _not_ours(self, path: str, st: dict) -> str | None:
        """Why the cached archive at ``path`` is not what this host uploaded; None if it is
        (uploads.py)."""
        ours = uploads.recorded(self._upload_key(path))
        if ours is None:
            return f"the cached {path} is not one this host uploaded (no record of it here)"
        differs = ours.differs(self._described(path, st))
        return None if differs is None else f"the cached {path} was replaced: {differs}"

    def upload_json(self, app_id: str, name: str, obj) -> dict:
        return self.upload(app_id, {name: json.dumps(obj).encode()})[name]

    def exists(self, app_id: str) -> bool:
        return (
            self._call("reading", self.client.status, self.job_dir(app_id), strict=False)
            is not None
        )

    def list_jobs(self) -> list[str]:
        got = self._call("listing", self.client.status, self.root, strict=False)
        names = self._call("listing", self.client.list, self.root) if got else []
        return [n for n in names if n not in (ENVS, PYTHONS, SRCS)]

    def remove(self, app_id: str) -> None:
        d = self.job_dir(app_id)
        self._call(f"deleting {d}", self.client.delete, d, recursive=True)


def local_resource_json(entries: dict[str, dict]) -> dict:
    """The REST submission's ``local-resources`` form."""
    return {"entry": [{"key": k, "value": v} for k, v in entries.items()]}
