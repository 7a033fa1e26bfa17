"""``GET /api/v1/feed``: what a follower (widgets/follow.py) needs per look, in one request.

It waits until the job changes after the version the follower last saw (a heartbeat, a log
batch, an event, a result) and answers the snapshot, the events after ``since`` and each
task's log text past the follower's offsets. One request per look instead of a snapshot, an
events poll and a log read per task; and a log batch wakes it, so a line reaches the widget
as soon as the executor ships it."""

from __future__ import annotations

import time

from ..core.protocol import TERMINAL_JOB_STATES, FeedAnswer, FeedLog, NoBody
from .http import BaseHandler, whole_arg

# Per task and answer: a task that wrote more is read again at once (follow.py's chunks).
FEED_LOG_READ = 256 << 10


class FeedHandler(BaseHandler):
    records = {"GET": (NoBody, FeedAnswer)}

    async def get(self) -> None:
        since, seen = self.int_arg("since", 0), self.int_arg("version", 0)
        attempt = self.job_attempt()
        offsets = self.offsets()
        deadline = time.monotonic() + self.seconds_arg("timeout", 0)
        while self.am.version <= seen and self.coord.state not in TERMINAL_JOB_STATES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.wait_change(left)
        version = self.am.version
        snapshot = self.coord.snapshot_json()  # before the logs: they are never behind it
        logs = {}
        for task, offset in offsets.items():
            data = self.read_log(task, attempt, offset, FEED_LOG_READ)
            text = data.decode("utf-8", errors="replace")
            logs[task] = FeedLog(text, offset + len(data), len(data) == FEED_LOG_READ)
        events = self.coord.events
        answer = FeedAnswer.encode(
            version=version,
            snapshot=snapshot,
            attempt=attempt,
            events=events[since:],
            next=len(events),
            logs=logs,
        )
        self.finish(answer)

    def offsets(self) -> dict[str, int]:
        """``offsets=worker:0=120,worker:1=0``: the follower's place in each task's log."""
        out = {}
        for pair in filter(None, self.get_argument("offsets", "").split(",")):
            task, _, raw = pair.rpartition("=")
            out[self.job_task(task)] = whole_arg(f"offsets ({task})", raw)
        return out
