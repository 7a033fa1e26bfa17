"""Every job the user has, finished or not, from wherever it is kept, and the retention.

- This host's job records, ``$TONY_JUPYTER_HOME/jobs/<id>/``: for a local job the directory
  *is* its history entry (the AM adds ``history.json`` and ``metrics.json`` at the end).
- With a cluster configured (``HADOOP_CONF_DIR``): the history on HDFS, and the RM's
  applications of type TONY-JUPYTER of this user (``yarn/hdfsjobs.py``), so jobs submitted from
  another host, or another ``TONY_JUPYTER_HOME``, are listed and can be opened (:func:`open_job`
  copies such a job's record here, under ``jobs/``).

Retention (``retention.days()``): :func:`prune_local` removes records of jobs that ended
longer ago than that, and nothing else: not a running job's, not one without a final status.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core import jobdir, retention
from ..core.aminfo import AmInfo
from ..core.errors import JobNotFoundError, TonyError
from ..core.numbers import shown
from ..core.protocol import JOB_ID, JobSnapshot, JobState, JobSummary
from .client import JobRecord, find_job, is_job_dir, jobs_dir, list_jobs, pid_alive
from .pickclient import open_client

SUMMARY_THREADS = 8
ENDED = {JobState.SUCCEEDED.value, JobState.FAILED.value, JobState.KILLED.value}


def cluster_configured() -> bool:
    return bool(os.environ.get("HADOOP_CONF_DIR"))


def _am_alive(rec: JobRecord) -> bool:
    try:
        am = AmInfo.read(rec.layout.am_info)
    except ValueError:
        return False
    return am is not None and am.pid > 0 and pid_alive(am.pid)


def prune_local(
    root: Path | None = None, keep_days: float | None = None, now: float | None = None
) -> list[str]:
    """Remove the records of jobs that ended more than ``keep_days`` ago; their ids."""
    keep_days = retention.days() if keep_days is None else keep_days
    cutoff = (time.time() if now is None else now) - keep_days * 86400
    removed = []
    for rec in list_jobs(root):
        # an ended job's summary has the state and end time too, and is cached (one stat)
        status = _ended_summary(rec) or _final_status(rec) or {}
        finished = status.get("finished")
        if status.get("state") not in ENDED or not isinstance(finished, (int, float)):
            continue  # running, no final status, or a damaged one: an entry of unknown age
        if finished < cutoff and not _am_alive(rec):
            rec.remove()
            _ENDED.pop(rec.layout.status, None)
            removed.append(rec.id)
    return removed


# status.json -> (its mtime and size, the summary): an ended job's status does not change, and
# the side panel lists every job every 2 s; a rewritten file is read again.
_ENDED: dict[Path, tuple[tuple[int, int], dict]] = {}


def _ended_summary(rec: JobRecord) -> dict | None:
    """The summary of a job whose AM is gone and left its final status (what the job's client
    would read too), without a client: most of a long history."""
    if rec.layout.am_info.exists():
        return None
    path = rec.layout.status
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _ENDED.get(path)
    if hit is not None and hit[0] == stamp:
        return dict(hit[1])
    status = _final_status(rec)
    if status is None or status.get("state") not in ENDED:
        return None
    row = JobSummary.of(JobSnapshot.checked(status)).to_json()
    _ENDED[path] = (stamp, row)
    return dict(row)


def _final_status(rec: JobRecord) -> dict | None:
    """status.json when it is a job's status; None when missing or damaged (the job's client
    words the damage: local_summary)."""
    status = rec.read_json(jobdir.STATUS)
    try:
        return JobSnapshot.checked(status).to_json() if status is not None else None
    except ValueError:
        return None


def local_summary(rec: JobRecord) -> dict:
    try:
        return JobSummary.of(open_client(rec).snapshot()).to_json()
    except (TonyError, OSError, ValueError) as e:
        return JobSummary(job_id=rec.id, reason=str(e)).to_json()  # state UNKNOWN


@dataclass
class Listing:
    rows: list[dict] = field(default_factory=list)  # JobSummary JSON, newest first
    where: dict[str, str] = field(default_factory=dict)  # job id -> "here", "history", "yarn"
    notes: list[str] = field(default_factory=list)  # what could not be read, worded


def all_jobs(root: Path | None = None, remote: bool | None = None) -> Listing:
    """This host's records, then (with a cluster) the HDFS history's and the RM's jobs that
    are not here. Prunes this host's records past the retention first."""
    prune_local(root)
    out = Listing()
    recs = list_jobs(root)
    live = []
    for rec in recs:
        row = _ended_summary(rec)
        if row is None:
            live.append(rec)
        else:
            out.rows.append(row)
    with ThreadPoolExecutor(SUMMARY_THREADS) as pool:  # a running job's AM is asked over HTTP
        out.rows += pool.map(local_summary, live)
    out.where.update((rec.id, "here") for rec in recs)
    if cluster_configured() if remote is None else remote:
        from .yarn.hdfsjobs import remote_jobs

        try:
            for where, row in remote_jobs(root, set(out.where)):
                out.rows.append(row)
                out.where[row["job_id"]] = where
        except TonyError as e:
            out.notes.append(f"the cluster's jobs are not listed: {e}")
    out.rows.sort(key=lambda r: r.get("started") or 0, reverse=True)
    return out


def open_job(job_id: str, root: Path | None = None) -> JobRecord:
    """The job's record here; else, with a cluster, one made here from its HDFS history
    entry or (still running) its staging directory."""
    if not re.fullmatch(JOB_ID, job_id):  # or a 5,000-character name is an OSError below
        raise JobNotFoundError(
            f"{shown(job_id)} is not a job id (up to 128 letters, digits, _ and -); "
            "`%tony list` shows the jobs there are"
        )
    try:
        if root is None:
            return find_job(job_id)
        d = jobs_dir(root) / job_id
        if is_job_dir(d):
            return JobRecord(job_id, d)
    except JobNotFoundError:
        if not cluster_configured():
            raise
    if cluster_configured():
        from .yarn.hdfsjobs import adopt

        rec = adopt(job_id, root)
        if rec is not None:
            return rec
    raise JobNotFoundError(f"no job {job_id!r}; `%tony list` shows the jobs there are")
