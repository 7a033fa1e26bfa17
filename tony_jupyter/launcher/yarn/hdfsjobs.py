"""The user's YARN jobs as any host sees them: the history the AMs keep on HDFS
(``/user/<user>/.tony-jupyter/history/<application id>/``, am/yarn/historyhdfs.py) and the RM's
applications of type TONY-JUPYTER, through :func:`secure.connect` (SPNEGO on a secure cluster).

An entry's ``history.json`` never changes once written, so its summary is cached here
(``$TONY_JUPYTER_HOME/history/<application id>.json``): listing 1,000 entries is one WebHDFS
LISTSTATUS plus a read for each entry not seen before. :func:`adopt` makes a job record here
for a job submitted elsewhere, from its entry (a finished job) or its staging directory (a
running one: its spec and token, readable only by its user).
"""

from __future__ import annotations

import json
import posixpath
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...core import jobdir
from ...core.errors import BackendError, JobNotFoundError
from ...core.jobdir import JobDir
from ...core.protocol import JobState, JobSummary
from .. import damage
from ..client import JobRecord, home, jobs_dir
from ..damage import DamagedRecordError
from . import secure
from .jobclient import lost_snapshot
from .rm import APP_TYPE
from .staging import STAGING
from .warmkeeper import WARM_TAG

HISTORY = "history"
READ_THREADS = 8
RM_STATES = {"RUNNING": JobState.RUNNING, "FINISHING": JobState.RUNNING}


def history_root(user: str) -> str:
    return f"/user/{user}/{STAGING}/{HISTORY}"


def _cache_dir(root: Path | None) -> Path:
    d = (root or home()) / HISTORY
    d.mkdir(parents=True, exist_ok=True)
    return d


def entries(cluster: secure.Cluster) -> list[str]:
    """The application ids with a history entry on HDFS."""
    st = cluster.staging
    path = history_root(cluster.conf.user)
    if st._call("listing", st.client.status, path, strict=False) is None:
        return []
    # a dot-name is an entry still being written (am/yarn/historyhdfs.py renames it when whole)
    return sorted(a for a in st._call("listing", st.client.list, path) if not a.startswith("."))


def entry_record(cluster: secure.Cluster, app_id: str, root: Path | None = None) -> dict | None:
    """The entry's history.json (cached here once read); None when HDFS cannot be read now.
    A damaged entry raises DamagedHistoryError."""
    cached = _cache_dir(root) / f"{app_id}.json"
    try:
        got = damage.read_json(cached)
        if got is not None:
            return got
    except DamagedRecordError:  # read again from HDFS, and the cache written anew
        shutil.rmtree(cached, ignore_errors=True)
        cached.unlink(missing_ok=True)
    st = cluster.staging
    entry = f"{history_root(cluster.conf.user)}/{app_id}"
    path = f"{entry}/{jobdir.HISTORY}"
    try:
        data = st._call(f"reading {path}", _read_all, st.client, path)
    except BackendError as e:
        if st._call("reading", st.client.status, path, strict=False) is None:
            raise DamagedHistoryError(entry, "has no history.json") from None
        if "is a directory" in str(e).lower() or "not a file" in str(e).lower():
            raise DamagedHistoryError(entry, "has a directory as its history.json") from None
        return None  # HDFS cannot be read now: not the entry's fault
    try:
        got = json.loads(data)
        JobSummary.checked(got["summary"])
    except (ValueError, KeyError, TypeError) as e:
        why = "is empty" if not data.strip() else f"is not a whole history record ({e!r:.60})"
        raise DamagedHistoryError(entry, f"has a history.json that {why}") from None
    tmp = cached.with_suffix(f".{secrets.token_hex(3)}.tmp")
    tmp.write_text(json.dumps(got))
    tmp.replace(cached)
    return got


def _read_all(client, path: str) -> bytes:
    with client.read(path) as reader:  # the request is made here: inside Staging._call
        return reader.read()


class DamagedHistoryError(BackendError):
    def __init__(self, entry: str, why: str):
        self.entry = entry
        super().__init__(
            f"damaged history entry: {entry} {why} (its cluster stopped while it was written?); "
            f"remove it to forget the job: hdfs dfs -rm -r {entry}"
        )


def remote_jobs(root: Path | None, known: set[str]) -> list[tuple[str, dict]]:
    """``("history" | "yarn", JobSummary JSON)`` for the user's jobs not in ``known``."""
    cluster = secure.connect()
    ids = [a for a in entries(cluster) if a not in known]

    def summary(app_id: str) -> dict | None:
        try:
            rec = entry_record(cluster, app_id, root)
        except DamagedHistoryError as e:  # listed as damaged, with what to do
            return JobSummary(job_id=app_id, backend="yarn", reason=str(e)).to_json()
        return JobSummary.checked(rec["summary"]).to_json() if rec else None

    with ThreadPoolExecutor(READ_THREADS) as pool:
        rows = list(pool.map(summary, ids))
    out = [("history", row) for row in rows if row]
    _forget_pruned(root, set(ids) | known)
    seen = known | {row["job_id"] for _, row in out}
    for app in cluster.rm.apps(app_type=APP_TYPE):
        if app.get("id") in seen or app.get("user") != cluster.conf.user:
            continue
        if WARM_TAG in (app.get("applicationTags") or "").split(","):
            continue  # a warm AM waiting for a job (warmproc.py), or one handed a job elsewhere
        snap = lost_snapshot(app["id"], {"name": app.get("name", "")}, app)
        if app.get("state") in RM_STATES:
            snap = type(snap).from_json({**snap.to_json(), "state": "RUNNING", "reason": ""})
        out.append(("yarn", JobSummary.of(snap).to_json()))
    return out


def _forget_pruned(root: Path | None, listed: set[str]) -> None:
    """Cached summaries of entries no longer on HDFS (retention removed them) go too."""
    for f in _cache_dir(root).glob("*.json"):
        if f.stem not in listed:
            f.unlink(missing_ok=True)


def adopt(app_id: str, root: Path | None = None) -> JobRecord | None:
    """A record here for the user's job ``app_id``: from its history entry, else from its
    staging directory while the RM still runs it; None when neither has it."""
    if not app_id.startswith("application_") or "/" in app_id:
        return None
    cluster = secure.connect()
    st, user = cluster.staging, cluster.conf.user
    d = jobs_dir(root) / app_id
    tmp = d.with_name(f".{app_id}.{secrets.token_hex(3)}")
    entry = f"{history_root(user)}/{app_id}"
    try:
        if st._call("reading", st.client.status, entry, strict=False) is not None:
            st._call(f"reading {entry}", st.client.download, entry, str(tmp), n_threads=4)
        else:
            app = cluster.rm.app(app_id)
            if not app or app.get("applicationType") != APP_TYPE:
                return None
            if app.get("user") != user:  # its records and token are its owner's alone
                raise JobNotFoundError(
                    f"{app_id} is {app.get('user')}'s job, not {user}'s: only its owner can "
                    "open it (status, logs, stacks, kill); `%tony list` shows your jobs"
                )
            tmp.mkdir(mode=0o700)
            for name in (jobdir.SPEC, jobdir.TOKEN):
                path = posixpath.join(st.job_dir(app_id), name)
                st._call(f"reading {path}", st.client.download, path, str(tmp / name))
        if not JobDir(tmp).holds_job():
            return None  # not a job's entry (its spec, status and history are gone)
        tmp.chmod(0o700)
        token = JobDir(tmp).token
        if not token.exists():
            token.touch(mode=0o600)  # a finished job: no AM to authenticate to
        cluster.job_info(app_id, adopted=True).write(JobDir(tmp).yarn_info)
        try:
            tmp.rename(d)
        except OSError:
            if not JobDir(d).spec.exists():  # else another process adopted it first
                raise
        return JobRecord(app_id, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch_tensorboard(rec: JobRecord) -> bool:
    """The chief's event files from the job's history entry into ``<record>/tensorboard``
    (for a finished job's TensorBoard, server_ext/boards.py); False when the entry has none."""
    info = rec.yarn()
    if info is None:
        return False
    st = secure.from_record(info)[1]
    remote = f"{history_root(info.user)}/{info.app_id}/{jobdir.TENSORBOARD}"
    if st._call("reading", st.client.status, remote, strict=False) is None:
        return False
    tmp = rec.dir / f".tensorboard.{secrets.token_hex(3)}"
    try:
        st._call(f"reading {remote}", st.client.download, remote, str(tmp), n_threads=4)
        tmp.rename(rec.layout.tensorboard)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True
