"""follow(): feed a JobView from a job's AM (or what it left on disk) until the job ends."""

from __future__ import annotations

import threading
import time

from ..core.protocol import FeedAnswer, FeedLog, JobSnapshot
from .view import JobView

# The AM's feed answers on every heartbeat and log batch; this keeps a busy job from turning
# follow() into a busy loop of snapshots.
MIN_INTERVAL_S = 0.2
# The AM caps one logs answer (1 MiB); a chunk this big means there is probably more behind it.
BIG_CHUNK = 256 * 1024
MAX_CHUNKS_PER_POLL = 8


def follow(
    client, view: JobView, stop: threading.Event | None = None, poll_s: float = 0.5
) -> JobSnapshot:
    """Follow a job until it is terminal (or ``stop`` is set), feeding ``view``.

    Each look is one request to the AM's feed (am/feed.py), which answers as soon as the job
    changes: a log batch reaches the view when the executor ships it. With no AM to ask, what
    it left on disk. Log offsets are per task and per attempt: when the attempt changes, the old
    attempt's last lines are fetched first, then the new attempt's logs start at offset 0 (the
    view marks the boundary). Returns the last snapshot; ``view.finish`` has been called if it
    is terminal. Safe to run in a background thread.
    """
    stop = stop or threading.Event()
    since, attempt, version = 0, 0, 0
    offsets: dict[str, int] = {}
    while True:
        began = time.monotonic()
        got = client.feed(since, version, attempt, offsets, timeout=poll_s if version else 0)
        if got is None:  # no AM (gone, or not yet there): the snapshot from what is left
            snap, fed = client.snapshot(), None
        else:
            answer = FeedAnswer.from_json(got)
            snap, fed = answer.snapshot, answer.logs
            since, version = answer.next, answer.version
        current = snap.attempt or 0
        if attempt and current != attempt:
            _take(view, offsets, fed)
            _pull_logs(client, view, offsets, attempt)
            offsets, fed = {}, None
        attempt = current
        for task in snap.tasks:
            offsets.setdefault(task.id, 0)
        view.update(snap)
        more = _take(view, offsets, fed)
        if attempt and (fed is None or more or snap.terminal):
            _pull_logs(client, view, offsets, attempt)
        if snap.terminal:
            view.finish(snap)
            return snap
        if stop.is_set():
            return snap
        if got is None:
            _, since = client.events(since, timeout=poll_s)
        # Once stopped, the loop still takes one more snapshot: a stop that came with the
        # job's end (a kill, Ctrl-C) then still leaves the final report in the cell.
        stop.wait(max(0.0, MIN_INTERVAL_S - (time.monotonic() - began)))


def _take(view: JobView, offsets: dict[str, int], fed: dict[str, FeedLog] | None) -> bool:
    """The feed's log text into the view; True if a task has more than one answer holds."""
    more = False
    for task_id, got in (fed or {}).items():
        if got.text:
            view.append_log(task_id, got.text)
        offsets[task_id] = got.offset
        more = more or got.more
    return more


def _pull_logs(client, view: JobView, offsets: dict[str, int], attempt: int) -> None:
    for task_id in offsets:
        for _ in range(MAX_CHUNKS_PER_POLL):
            text, offsets[task_id] = client.logs(task_id, offsets[task_id], attempt)
            if text:
                view.append_log(task_id, text)
            if len(text) < BIG_CHUNK:
                break
