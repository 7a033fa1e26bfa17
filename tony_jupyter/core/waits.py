"""How a YARN job's wait is worded: one line from a QueueWait (protocol), the same in the widget,
its text view, ``%tony status`` and the lines %%tony prints while an application is ACCEPTED."""

from __future__ import annotations

import time

from .protocol import Amount, JobSnapshot, QueueWait


def amount(a: Amount, gpus: bool) -> str:
    """'2048 MB, 1 vcores' (and ', 1 GPUs' where GPUs are in play)."""
    return f"{a.memory_mb} MB, {a.vcores} vcores" + (f", {a.gpus} GPUs" if gpus else "")


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m {s:02d}s" if m < 60 else f"{m // 60}h {m % 60:02d}m"


def wait_text(w: QueueWait, now: float) -> str:
    """waiting 12 s for queue 'default': worker:0 ask 2048 MB, 1 vcores; the queue uses 5120
    MB, 8 vcores of 6144 MB, 8 vcores (1024 MB, 0 vcores free); ... ; RM: <diagnostics>"""
    gpus = bool(w.asked.gpus or w.maximum.gpus)
    who = "the AM" if w.waiting_for == ("AM",) else ", ".join(w.waiting_for) or "the job"
    where = f"queue {w.queue!r}" + (f" (partition {w.partition!r})" if w.partition else "")
    parts = [
        f"waiting {_duration(now - w.since)} for {where}: {who} ask {amount(w.asked, gpus)}",
        f"the queue uses {amount(w.used, gpus)} of {amount(w.maximum, gpus)} "
        f"({amount(w.available, gpus)} free)",
    ]
    if w.user_limit is not None:
        parts.append(
            f"its user's limit there: {amount(w.user_limit, gpus)} "
            f"({amount(w.user_used, gpus)} used)"
        )
    if "AM" in w.waiting_for:
        parts.append(f"its AMs use {amount(w.am_used, False)} of {amount(w.am_limit, False)}")
    parts.append(f"{w.apps_ahead} application{'s' * (w.apps_ahead != 1)} ahead")
    if w.apps_pending:
        parts.append(f"{w.apps_pending} waiting for their AM")
    text = "; ".join(parts)
    diagnostics = " ".join(w.diagnostics.split())
    return f"{text}; RM: {diagnostics}" if diagnostics else text


def snapshot_wait(snap: JobSnapshot) -> str:
    """The job's wait in words while it waits (``snap.waiting``), "" otherwise."""
    if snap.waiting is None or snap.terminal:
        return ""
    return wait_text(snap.waiting, time.time())
