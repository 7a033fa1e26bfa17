"""The Coordinator's job as clients read it: ``GET job``, the feed, ``status.json``.

At 10,000 tasks a snapshot is read often (every follower's look, every ``GET job``) and is
most of what the AM spends outside heartbeats, so the JSON form is built straight from the
task records: the same dict that ``JobSnapshot.to_json()`` gives, without making a
``TaskView`` of each task (deep copy, typed reading, then plain writing: ~0.2 ms a task)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

from ..core.protocol import SCHEMA_VERSION, TERMINAL_JOB_STATES, JobSnapshot, JobState, TaskView
from .jobview import JobView
from .tasks import Task

TASK_FIELDS = tuple(f.name for f in fields(TaskView))


def task_json(t: Task) -> dict:
    """A task record's ``TaskView`` JSON form. Its values are the record's own (a heartbeat
    replaces ``progress`` whole, never edits it), so the caller encodes it before the next
    heartbeat or copies it."""
    d = {name: getattr(t, name) for name in TASK_FIELDS}
    d["state"] = str(getattr(t.state, "value", t.state))
    d["gpus"] = list(t.gpus_json)
    return d


def cluster_spec(tasks: Iterable[Task]) -> dict[str, list[str]]:
    """Each type's registered tasks' ``host:port``, by index: what the executors are handed."""
    spec: dict[str, list[str]] = {}
    for t in sorted(tasks, key=lambda t: (t.type, t.index)):
        if t.registered_at is None:  # elastic: a worker still to join (am/elastic.py)
            continue
        spec.setdefault(t.type, []).append(f"{t.host}:{t.port}")
    return spec


def snapshot_json(c: JobView) -> dict:
    """``c.snapshot().to_json()``, built directly."""
    return {
        "job_id": c.job_id,
        "name": c.spec.name,
        "backend": c.spec.backend,
        "state": JobState(c.state).value,
        "reason": c.reason,
        "failed_task": c.failed_task,
        "attempt": c.attempt,
        "max_attempts": c.spec.max_attempts,
        "attempts": [a.to_json() for a in c.attempt_history],
        "started": c.started_at,
        "finished": c.finished_at,
        "now": c.clock(),
        "endpoints": dict(c.endpoints),
        "chief": c.spec.chief_id,
        "tasks": [task_json(t) for t in c.tasks.values()],
        "schema_version": SCHEMA_VERSION,
        "history_pending": c.state in TERMINAL_JOB_STATES and not c.history_kept,
        "stall": c.stall.to_json() if c.stall is not None else None,
        "unallocated": (
            [] if c.state in TERMINAL_JOB_STATES else c.provider.unallocated(c.attempt)
        ),
        "waiting": None,  # the notebook side's, from the RM (launcher/yarn/waiting.py)
    }


def write_status(c: JobView, path: Path) -> None:
    """``status.json``: read once the AM is gone, when the history is kept (or never will be)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({**snapshot_json(c), "history_pending": False}, indent=1))
    tmp.replace(path)


def snapshot(c: JobView) -> JobSnapshot:
    return JobSnapshot.from_json(snapshot_json(c))
