"""When a job or an attempt fails: the Coordinator's failure rules, each a pure function of the
job's state at ``now`` that returns a :class:`Verdict` or None. The Coordinator applies the first
verdict (``tick``, and ``on_exit`` for a task's exit code); nothing else ends a job early.

- a task exited non-zero: the attempt fails (``exit_verdict``);
- the job ran past ``--timeout``: the job fails (``timed_out``);
- a task did not register within ``tony.task.registration-timeout-sec`` of its process being
  able to start (YARN: of its container leaving localization), or its container was still
  localizing after ``tony.task.localization-timeout-sec``: the attempt fails
  (``not_registered``; naming YARN's queue when it allocated no container; in an elastic job,
  when fewer than MIN workers, or not worker:0, registered: am/elastic.py);
- a task missed ``tony.task.max-missed-heartbeats`` heartbeats: the attempt fails
  (``missed_heartbeats``);
- tracked tasks still run ``tony.task.completion-grace-sec`` after the chief succeeded: the
  job fails and they are stopped (``past_completion_grace``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.protocol import DONE_TASK_STATES
from ..core.spec import JobSpec
from . import elastic
from .jobview import JobView
from .tasks import Task


@dataclass(frozen=True)
class Verdict:
    reason: str
    task: Task | None = None  # the task blamed: its attempt fails (and may be retried)
    # None: the whole job fails now, whatever attempts are left
    task_failed: bool = False  # mark the blamed task FAILED first (it is still alive)


def exit_verdict(task: Task, code: int, diagnostics: str) -> Verdict:
    why = f"{task.id} exited with code {code}"
    return Verdict(why + (f" ({diagnostics})" if diagnostics else ""), task)


def timed_out(c: JobView, now: float) -> Verdict | None:
    if c.spec.timeout_s and now - c.started_at > c.spec.timeout_s:
        return Verdict(
            f"timed out after {c.spec.timeout_s:g} s (tony.application.timeout / --timeout)"
        )
    return None


def not_registered(c: JobView, now: float) -> Verdict | None:
    if c.cluster_spec is not None:
        return None
    waiting = [t for t in c.tasks.values() if not t.registered_at]
    if not waiting:
        return None
    localizing = c.provider.localizing(c.attempt)
    slow = [t for t in waiting if now - localizing.get(t.id, now) > c.spec.localization_timeout_s]
    if slow:
        return Verdict(
            f"{', '.join(t.id for t in slow)} still localizing after "
            f"{c.spec.localization_timeout_s:g} s: its NodeManager was still fetching and "
            "unpacking the container's files (the packed environment above all); a smaller "
            "environment, or a longer tony.task.localization-timeout-sec",
            slow[0],
        )
    late = [
        t
        for t in waiting
        if t.id not in localizing and now - _clock(c, t) > c.spec.registration_timeout_s
    ]
    if not late:
        return None
    limit_s = f"{c.spec.registration_timeout_s:g} s"
    why = f"{', '.join(t.id for t in late)} did not register within {limit_s}"
    if c.spec.elastic:
        why = elastic.not_joined(c, late, limit_s)
    unplaced = c.provider.unallocated(c.attempt)
    if unplaced:
        why = (
            f"YARN allocated no container for {', '.join(unplaced)} within "
            f"{limit_s}: queue {c.spec.queue!r} has no room for them now "
            "(other applications hold its resources)"
        )
    return Verdict(f"{why} (tony.task.registration-timeout-sec)", late[0])


def _clock(c: JobView, t: Task) -> float:
    """When ``t``'s registration clock started: its attempt's start, or later, when its
    container ran only after its NodeManager had localized it (am/yarn/localizing.py)."""
    ran = c.provider.running_since(t.id, c.attempt)
    return max(c.attempt_started, ran or 0.0)


def silence_limit(spec: JobSpec) -> float:
    """Seconds without a heartbeat after which a task has missed its heartbeats."""
    return spec.heartbeat_interval_ms / 1000.0 * spec.max_missed_heartbeats


def missed_heartbeats(c: JobView, now: float) -> Verdict | None:
    t = c.deadlines.silent(c.tasks, now, silence_limit(c.spec))
    if t is None or t.last_heartbeat is None:
        return None
    why = (
        f"{t.id} missed {c.spec.max_missed_heartbeats} heartbeats "
        f"(silent for {now - t.last_heartbeat:.1f} s)"
    )
    return Verdict(why, t, task_failed=True)


def past_completion_grace(c: JobView, now: float) -> Verdict | None:
    done_at = c.chief_done_at
    if not done_at or now - done_at <= c.spec.completion_grace_s:
        return None
    left = [t.id for t in c.tasks.values() if t.tracked and t.state not in DONE_TASK_STATES]
    return Verdict(
        f"{', '.join(left)} still running {c.spec.completion_grace_s:g} s after "
        f"{c.spec.chief_id} finished; stopped them (tony.task.completion-grace-sec)"
    )


# Checked in this order on every tick; the first verdict wins.
TIMER_RULES = (timed_out, not_registered, missed_heartbeats, past_completion_grace)
