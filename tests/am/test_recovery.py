"""A lost AM's failed attempts, replayed from its event log as typed records: those an older
AM wrote (no reason, no task) too, and a damaged one skipped."""

from __future__ import annotations

from tony_jupyter.am.recovery import replay
from tony_jupyter.core.protocol import FailedAttempt


def attempt_event(seq: int, **data) -> dict:
    return {"seq": seq, "time": float(seq), "kind": "attempt", **data}


def test_failed_attempts_replay_as_records_old_and_damaged_ones_too():
    records = [
        attempt_event(1, attempt=1, state="STARTED"),
        attempt_event(
            2, attempt=1, state="FAILED", reason="worker:1 exited with code 3", task="worker:1"
        ),  # fmt: skip
        attempt_event(3, attempt=2, state="STARTED"),
        attempt_event(4, attempt=2, state="FAILED", reason=None),  # an older AM's: no task
        attempt_event(5, attempt="3", state="FAILED", reason="x"),  # damaged: skipped
        attempt_event(6, attempt=3, state="STARTED"),
    ]
    r = replay(records, first_seq=0)
    assert r.attempt == 3
    assert r.attempt_history == [
        FailedAttempt(1, "worker:1 exited with code 3", "worker:1"),
        FailedAttempt(2, "", None),
    ]
    assert r.failed_task is None  # the last failed attempt blamed no task
    assert [a.to_json() for a in r.attempt_history][1] == {"attempt": 2, "reason": "", "task": None}
