"""The job's history entry on HDFS: ``/user/<user>/.tony-jupyter/history/<application id>/``,
beside the staging directories, readable by the user only (the root and each entry 700, the
entry's files 600, whatever the NameNode's umask), written by the AM through the Hadoop
FileSystem it already holds (its delegation tokens on a secure cluster) before it deletes
staging, so any host the user works from can list and open the job after the AM is gone.

Retention: entries older than ``TONY_JUPYTER_HISTORY_DAYS`` (default 30, as TonY's portal)
are removed by each AM after it writes its own; nothing else under the root is touched.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import time
from pathlib import Path

from ...core import jobdir, retention
from ...core.jobdir import JobDir
from .. import historyrecord as history

log = logging.getLogger("tony_jupyter.am.yarn")

HISTORY = "history"


def gather(job_dir: Path) -> Path:
    """The entry's files, copied (localized files are symlinks) into one local directory."""
    out = job_dir / ".history"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for name in history.FILES:
        if (job_dir / name).exists():
            shutil.copyfile(job_dir / name, out / name)
    if JobDir(job_dir).logs.is_dir():
        shutil.copytree(JobDir(job_dir).logs, JobDir(out).logs)
    return out


def save(fs, J, staging: str, app_id: str, job_dir: Path) -> str:
    """Copy the entry to HDFS (replacing one an earlier AM attempt wrote); its path. Written
    whole under a hidden name, then renamed: a reader sees no entry or a complete one."""
    root = J.Path(J.Path(staging).getParent(), HISTORY)
    dest = J.Path(root, app_id)
    tmp = J.Path(root, f".{app_id}.{secrets.token_hex(4)}.tmp")  # readers skip dot-names
    local = gather(job_dir)
    fs.mkdirs(root)
    fs.setPermission(root, J.FsPermission("700"))  # also a root an older version made 755
    try:
        fs.copyFromLocalFile(False, True, J.Path(str(local)), tmp)
        board = J.Path(staging.rstrip("/") + "/" + jobdir.TENSORBOARD)  # the chief's events
        if fs.exists(board):
            rename(J, fs, board, J.Path(tmp, jobdir.TENSORBOARD))
        owner_only(fs, J, tmp)
        if fs.exists(dest):
            fs.delete(dest, True)
        rename(J, fs, tmp, dest)
    finally:
        shutil.rmtree(local, ignore_errors=True)
        if fs.exists(tmp):
            fs.delete(tmp, True)
    return str(dest.toString())


def rename(J, fs, src, dst) -> None:
    """HDFS's rename that raises why it failed. (A plain ``fs.rename(src, dst)`` from Python
    is not FileSystem's boolean rename: JPype resolves it to the ``Options.Rename...`` varargs
    overload, which returns nothing; ``if not fs.rename(...)`` then took every success for a
    failure, which is how the history entry's rename "failed" before.)"""
    fs.rename(src, dst, J.RenameNone)


def owner_only(fs, J, entry) -> None:
    """The entry and its files (not each log below logs/: the entry's 700 already closes them)
    readable by their owner only; a few calls whatever the number of tasks."""
    fs.setPermission(entry, J.FsPermission("700"))
    for st in fs.listStatus(entry):
        fs.setPermission(st.getPath(), J.FsPermission("700" if st.isDirectory() else "600"))


def prune(fs, J, staging: str, keep_days: float, now: float | None = None) -> list[str]:
    """Remove history entries last written more than ``keep_days`` ago; their names."""
    root = J.Path(J.Path(staging).getParent(), HISTORY)
    cutoff_ms = ((now or time.time()) - keep_days * 86400) * 1000
    removed: list[str] = []
    if not fs.exists(root):
        return removed
    for st in fs.listStatus(root):
        if st.isDirectory() and int(st.getModificationTime()) < cutoff_ms:
            fs.delete(st.getPath(), True)
            removed.append(str(st.getPath().getName()))
    return removed


def keep(fs, J, staging: str, app_id: str, job_dir: Path) -> None:
    """Save the job's entry, then apply the retention to everyone's (this user's) entries."""
    log.info("history: %s", save(fs, J, staging, app_id, job_dir))
    try:
        gone = prune(fs, J, staging, retention.days())
        if gone:
            log.info("history: removed %d entries past retention", len(gone))
    except Exception as e:  # noqa: BLE001 - retention is retried by the next job
        log.warning("history retention: %s", e)


def wrap_up(J, conf, staging: str, job_dir: Path, keep: bool) -> None:
    """Keep the AM's record (status, events, logs) in staging with --keep-staging; else
    delete the staging directory: nothing of the job stays on HDFS."""
    try:
        path = J.Path(staging)
        fs = path.getFileSystem(conf)
        if keep:
            for name in (jobdir.STATUS, jobdir.EVENTS, jobdir.LOGS):
                src = job_dir / name
                if src.exists():
                    fs.copyFromLocalFile(False, True, J.Path(str(src)), J.Path(path, "am"))
        else:
            fs.delete(path, True)
    except Exception as e:  # noqa: BLE001 - never fail the job's end over its staging
        log.warning("staging %s: %s", staging, e)
