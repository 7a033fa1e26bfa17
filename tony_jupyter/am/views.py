"""The Coordinator's job as clients read it: ``GET job``, the feed, ``status.json``.

At 10,000 tasks a snapshot is read often (every follower's look, every ``GET job``) and is
most of what the AM spends outside heartbeats, so the JSON form is built straight from the
task records: the same dict that ``JobSnapshot.to_json()`` gives, without making a
``TaskView`` of each task (deep copy, typed reading, then plain writing: ~0.2 ms a task)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..protocol import (
    SCHEMA_VERSION,
    TERMINAL_JOB_STATES,
    GpuUse,
    JobSnapshot,
    JobState,
    TaskView,
)
from .jobview import JobView

TASK_FIELDS = tuple(f.name for f in fields(TaskView))


def gpus_json(gpus: object) -> list[dict]:
    """A heartbeat's GPUs as the snapshot shows them (``GpuUse``'s JSON form), made once per
    heartbeat rather than per read; entries that are not a GPU with an index are left out."""
    if not isinstance(gpus, list):
        return []
    return [GpuUse.from_json(g).to_json() for g in gpus if isinstance(g, dict) and "index" in g]


def task_json(t: Any) -> dict:
    """A task record's ``TaskView`` JSON form. Its values are the record's own (a heartbeat
    replaces ``progress`` and ``gpus`` whole, never edits them), so the caller encodes it
    before the next heartbeat or copies it."""
    d = {name: getattr(t, name) for name in TASK_FIELDS}
    d["state"] = str(getattr(t.state, "value", t.state))
    return d


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
        "attempts": [
            {"attempt": a["attempt"], "reason": a["reason"], "task": a.get("task")}
            for a in c.attempt_history
        ],
        "started": c.started_at,
        "finished": c.finished_at,
        "now": c.clock(),
        "endpoints": dict(c.endpoints),
        "chief": c.spec.chief_id,
        "tasks": [task_json(t) for t in c.tasks.values()],
        "schema_version": SCHEMA_VERSION,
        "history_pending": c.state in TERMINAL_JOB_STATES and not c.history_kept,
    }


def snapshot(c: JobView) -> JobSnapshot:
    return JobSnapshot.from_json(snapshot_json(c))
