"""The job's history record, written by the AM when the job ends: ``history.json`` (what the
job was and how it ended: spec, the cell's SHA-256, attempts with their reasons, final state,
tasks, who ran it) and ``metrics.json`` (each task's progress and resource use over time,
:mod:`.metrics`), beside ``spec.json``, ``cell.py``, ``events.jsonl``, ``status.json`` and
``logs/`` in the job's directory.

Locally the job's directory (``$TONY_JUPYTER_HOME/jobs/<id>/``) *is* its history entry; on
YARN the AM copies these files to HDFS (``yarn/historyhdfs.py``) before it deletes staging.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import time
from pathlib import Path

from ..core import jobdir
from ..core.jobdir import JobDir
from ..core.protocol import JobSummary
from .coordinator import Coordinator

HISTORY_VERSION = 1
# What a history entry holds (plus logs/): never the token, pickles (names, the chief's
# value) or shards.
FILES = (
    jobdir.HISTORY,
    jobdir.METRICS,
    jobdir.SPEC,
    jobdir.CELL,
    jobdir.BUNDLE,
    jobdir.EVENTS,
    jobdir.STATUS,
)


def _user() -> str:
    try:
        return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    except (KeyError, OSError):
        return ""


def record(job_dir: Path, coordinator: Coordinator) -> dict:
    snap = coordinator.snapshot()
    path = JobDir(job_dir).cell
    cell = path.read_bytes() if path.exists() else b""
    return {
        "history_version": HISTORY_VERSION,
        "job_id": snap.job_id,
        "user": _user(),
        "written": time.time(),
        "cell_sha256": hashlib.sha256(cell).hexdigest(),
        "cell_bytes": len(cell),
        "summary": JobSummary.of(snap).to_json(),
        "attempts": [a.to_json() for a in snap.attempts],
        "spec": json.loads(coordinator.spec.to_json()),
    }


def write(job_dir: Path, coordinator: Coordinator) -> None:
    """history.json and metrics.json into the job's directory (atomically each)."""
    d = JobDir(job_dir)
    for path, data in (
        (d.metrics, coordinator.metrics.to_json()),
        (d.history, record(job_dir, coordinator)),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
