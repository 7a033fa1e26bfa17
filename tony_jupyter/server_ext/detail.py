"""``GET /tony/api/jobs/<id>/detail``: what the labextension's job page and its comparison of
runs show, from the job's history entry (``history.json``'s siblings: ``spec.json``,
``events.jsonl``, ``metrics.json``) and the job's snapshot (its AM while it runs).

Each attempt is a span on a timeline: its start and end come from the ``attempt`` events the
Coordinator writes (``STARTED``, ``FAILED``); the last one ends when the job did. The metric
series are ``metrics.json``'s (am/metrics.py), written when the job ends; while it runs, the
same series from its AM (``GET /api/v1/metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core import jobdir
from ..core.errors import BackendError
from ..core.protocol import Event, EventKind, JobSnapshot, StackGroups, StacksAnswer
from ..core.records import Record
from ..core.stackgroups import grouped
from ..core.usage import gpu_idle
from ..launcher.client import JobClient


@dataclass(frozen=True)
class AttemptSpan(Record):
    """One attempt of a job on the timeline."""

    attempt: int
    started: float | None = None
    finished: float | None = None  # None: still running
    state: str = "RUNNING"  # RUNNING, or FAILED, or how the job ended (its last attempt)
    reason: str | None = None
    task: str | None = None  # the task that failed it


@dataclass(frozen=True)
class JobDetail(Record):
    """A job's page: its snapshot, spec, attempts and each task's metric series by attempt
    (``{"<attempt>": {"<task>": [{"t", "step", "loss", "cpu_percent", ...}]}}``)."""

    job: JobSnapshot
    spec: dict[str, Any] = field(default_factory=dict)
    attempts: tuple[AttemptSpan, ...] = ()
    metrics: dict[str, dict[str, list[dict]]] = field(default_factory=dict)
    history: bool = False  # whether the AM wrote the job's history entry (history.json)
    damaged: str = ""  # what of the record could not be read, and what to do (damage.py)
    # the last attempt's GPUs-idle share in words while it stays high (usage.py), else ""
    gpu_idle: str = ""
    stall: str = ""  # the job is stalled: Stall.text's line
    stall_stacks: StackGroups | None = None  # a stalled job's stacks, as they were gathered


def attempt_spans(snap: JobSnapshot, events: list[Event]) -> tuple[AttemptSpan, ...]:
    """The attempts from the job's events; from its snapshot alone when there are none."""
    spans: dict[int, dict] = {}
    for e in events:
        d = e.data
        if e.kind is not EventKind.ATTEMPT or not isinstance(d.get("attempt"), int):
            continue
        span = spans.setdefault(d["attempt"], {"attempt": d["attempt"]})
        if d.get("state") == "STARTED":
            span["started"] = e.time
        elif d.get("state") == "FAILED":
            span.update(finished=e.time, state="FAILED", reason=d.get("reason"), task=d.get("task"))
    for failed in snap.attempts:  # recovered from an earlier AM: reasons without events
        span = spans.setdefault(failed.attempt, {"attempt": failed.attempt})
        span.setdefault("state", "FAILED")
        span.setdefault("reason", failed.reason)
        span.setdefault("task", failed.task)
    if snap.attempt and snap.attempt not in spans:
        spans[snap.attempt] = {"attempt": snap.attempt, "started": snap.started}
    if spans:
        last = spans[max(spans)]
        if "state" not in last:
            ended = snap.terminal
            last.update(
                state=str(snap.state) if ended else "RUNNING",
                finished=snap.finished if ended else None,
                reason=snap.reason if ended else None,
            )
    return tuple(AttemptSpan.from_json(spans[a]) for a in sorted(spans))


def job_detail(client: JobClient) -> JobDetail:
    """The job's page (blocking: its AM may be asked over HTTP)."""
    rec = client.record
    snap = client.snapshot()
    events, _ = client.events(0)
    metrics = rec.read_json(jobdir.METRICS)
    if metrics is None and not snap.terminal:  # an older AM answers 404: no series yet
        metrics = client.call_am("GET", "metrics", none_on_404=True)
    series = (metrics or {}).get("attempts") or {}
    if not _series_shaped(series):
        rec.note_damage(jobdir.METRICS, "holds no metric series (another shape)")
        series = {}
    numbered = [int(k) for k in series if k.isascii() and k.isdigit()]
    idle = gpu_idle(series[str(max(numbered))]) if numbered else None
    stall = snap.stall
    return JobDetail(
        job=snap,
        spec=rec.read_json(jobdir.SPEC) or {},
        attempts=attempt_spans(snap, events),
        metrics=series,
        history=rec.layout.history.is_file(),
        damaged=rec.damage_note(),
        gpu_idle=idle.text() if idle is not None and idle.high else "",
        stall=stall.text(snap.now or stall.marked, snap.terminal) if stall else "",
        stall_stacks=(
            grouped(StacksAnswer(0, stall.stacks), stall.behind) if stall and stall.stacks else None
        ),
    )


def job_stacks(client: JobClient) -> StackGroups | str:
    """Every running task's stacks, grouped, the tasks furthest behind a stall marked; or why
    there are none, in words (blocking: the job's AM asks each task's sidecar)."""
    snap = client.snapshot()
    if snap.terminal:
        return f"job {snap.job_id} has ended ({snap.state}): no task runs to take stacks of"
    answer = client.stacks()
    if answer is None:  # the handler's 502
        raise BackendError(f"job {snap.job_id}: its AM did not answer (state {snap.state})")
    return grouped(answer, snap.stall.behind if snap.stall else ())


def _series_shaped(series: Any) -> bool:
    """``{"<attempt>": {"<task>": [{...}, ...]}}``, what the job page's charts read."""
    return isinstance(series, dict) and all(
        isinstance(tasks, dict)
        and all(isinstance(s, list) and all(isinstance(x, dict) for x in s) for s in tasks.values())
        for tasks in series.values()
    )
