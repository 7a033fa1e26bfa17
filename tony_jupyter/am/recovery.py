"""A new AM attempt takes over a job from the event log its lost predecessor kept (YARN): what
its records say, replayed; the Coordinator takes it over (``Coordinator.recover``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.protocol import Event, EventKind, FailedAttempt, JobState

ENDPOINT_SECRETS = ("key", "path_key")  # an endpoint's credentials (TensorBoard's guard)


@dataclass(frozen=True)
class Recovered:
    """What the lost AM's records say: :meth:`Coordinator.recover` takes it over, then
    :meth:`Coordinator.start` goes on with the next attempt (an attempt lost with its AM counts
    against --max-attempts for later failures)."""

    events: list[Event] = field(default_factory=list)  # renumbered, without endpoint secrets
    logs: list[dict] = field(default_factory=list)  # the tasks' log batches, as add_logs kept them
    attempt: int = 0  # the last attempt started
    attempt_history: list[FailedAttempt] = field(default_factory=list)  # those that failed
    state: JobState | None = None  # the job's last state, and its last reason given
    reason: str = ""
    endpoints: dict[str, str] = field(default_factory=dict)
    endpoint_keys: dict[str, dict[str, str]] = field(default_factory=dict)
    endpoint_owners: dict[str, str | None] = field(default_factory=dict)

    @property
    def failed_task(self) -> str | None:
        """The task blamed for the last failed attempt (None: none, or no task was)."""
        return self.attempt_history[-1].task if self.attempt_history else None


def replay(records: list[dict], first_seq: int) -> Recovered:
    """The lost AM's history (its events numbered on from ``first_seq``), attempt number,
    endpoints, state and its tasks' logs; damaged records are skipped."""
    records = [e for e in records if _whole(e)]
    kept = [Event.from_json(e) for e in records if e["kind"] != EventKind.LOG]
    events: list[Event] = []
    attempt, state, reason = 0, None, ""
    history: list[FailedAttempt] = []
    endpoints: dict[str, str] = {}
    keys: dict[str, dict[str, str]] = {}
    owners: dict[str, str | None] = {}
    for old in sorted(kept, key=lambda e: e.seq):
        d = old.data
        public = {k: v for k, v in d.items() if k not in ENDPOINT_SECRETS}
        events.append(replace(old, seq=first_seq + len(events), data=public))
        if old.kind is EventKind.ATTEMPT:
            attempt = max(attempt, int(d["attempt"]))
            if d.get("state") == "FAILED":
                # an older AM's record may lack a reason: the attempt still failed
                history.append(
                    FailedAttempt(int(d["attempt"]), d.get("reason") or "", d.get("task"))
                )
        elif old.kind is EventKind.ENDPOINT:
            endpoints[str(d["name"])] = str(d["url"])
            keys[str(d["name"])] = {k: str(d[k]) for k in ENDPOINT_SECRETS if d.get(k)}
            owners[str(d["name"])] = str(d["task"]) if d.get("task") else None
        elif old.kind is EventKind.JOB:
            state, reason = JobState(d["state"]), d.get("reason") or reason
    logs = [e for e in records if e["kind"] == EventKind.LOG]
    return Recovered(events, logs, attempt, history, state, reason, endpoints, keys, owners)


def write_logs(batches: list[dict], path: Callable[[str, int], Path]) -> None:
    """A log batch the lost AM kept (see add_logs), appended to ``path(task, attempt)``:
    %tony attach, the widget and JobClient.logs show every attempt's logs, those of an attempt
    lost with its AM too."""
    for batch in batches:
        log = path(batch["task"], int(batch["attempt"]))
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(batch["text"])


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
