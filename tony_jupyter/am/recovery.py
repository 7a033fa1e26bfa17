"""A new AM attempt takes over a job from the event log its lost predecessor kept (YARN)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..protocol import Event, EventKind, JobState

if TYPE_CHECKING:
    from .coordinator import Coordinator

ENDPOINT_SECRETS = ("key", "path_key")  # an endpoint's credentials (TensorBoard's guard)


def recover(c: Coordinator, events: list[dict]) -> None:
    """The lost AM's history, attempt number, endpoints, state and its tasks' logs.
    :meth:`Coordinator.start` then goes on with the next attempt (an attempt lost with its AM
    counts against --max-attempts for later failures)."""
    events = [e for e in events if _whole(e)]
    for batch in (e for e in events if e["kind"] == EventKind.LOG):
        # A log batch the lost AM kept (see add_logs): %tony attach, the widget and
        # JobClient.logs show every attempt's logs, those of an attempt lost with its AM too.
        path = c.log_path(batch["task"], int(batch["attempt"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(batch["text"])
    kept = [Event.from_json(e) for e in events if e["kind"] != EventKind.LOG]
    for old in sorted(kept, key=lambda e: e.seq):
        d = old.data
        public = {k: v for k, v in d.items() if k not in ENDPOINT_SECRETS}
        c.keep_event(replace(old, seq=len(c.events), data=public).to_json())
        if old.kind is EventKind.ATTEMPT:
            c.attempt = max(c.attempt, int(d["attempt"]))
            if d.get("state") == "FAILED":
                c.failed_task = d.get("task")
                c.attempt_history.append(
                    {"attempt": d["attempt"], "reason": d.get("reason"), "task": d.get("task")}
                )
        elif old.kind is EventKind.ENDPOINT:
            c.endpoints[str(d["name"])] = str(d["url"])
            c.endpoint_keys[str(d["name"])] = {k: str(d[k]) for k in ENDPOINT_SECRETS if d.get(k)}
            c.endpoint_owners[str(d["name"])] = str(d["task"]) if d.get("task") else None
        elif old.kind is EventKind.JOB:
            c.state = d["state"]
            c.reason = d.get("reason") or c.reason
    c.keep_event(None)
    if c.events:
        c.started_at = c.events[0]["time"]


# What recovery reads of each kind of event, and its types (None: may be absent): a record
# without them (damaged, or written by another version) is skipped, not taken over.
_OPT = (str, type(None))
_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    EventKind.LOG: {"task": str, "attempt": int, "text": str},
    EventKind.ATTEMPT: {"attempt": int, "task": _OPT, "reason": _OPT},
    EventKind.ENDPOINT: {"name": str, "url": str, "key": _OPT, "path_key": _OPT},
    EventKind.JOB: {"state": str, "reason": _OPT},
}
_KINDS = {k.value for k in EventKind}
_STATES = {s.value for s in JobState}


def _whole(e: object) -> bool:
    if not isinstance(e, dict) or not isinstance(e.get("kind"), str) or e["kind"] not in _KINDS:
        return False
    # Log batches are kept as add_logs writes them, without a sequence number or a time.
    timed = isinstance(e.get("seq"), int) and isinstance(e.get("time"), (int, float))
    if e["kind"] != EventKind.LOG and not timed:
        return False
    if e["kind"] == EventKind.JOB and not (
        isinstance(e.get("state"), str) and e["state"] in _STATES
    ):
        return False
    wanted = _FIELDS.get(e["kind"], {})
    return all(
        isinstance(e.get(k), t) and not isinstance(e.get(k), bool) for k, t in wanted.items()
    )
