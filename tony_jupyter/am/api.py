"""The AM's versioned HTTP JSON API (tornado). Every request carries the job's secret token."""

from __future__ import annotations

import time

from tornado import web

from ..protocol import TERMINAL_JOB_STATES
from .coordinator import StaleAttempt
from .http import API, AMState, BaseHandler
from .session_api import ROUTES as SESSION_ROUTES


class JobHandler(BaseHandler):
    def get(self) -> None:
        self.finish(self.coord.snapshot().to_json())


class EventsHandler(BaseHandler):
    async def get(self) -> None:
        since = int(self.get_argument("since", "0"))
        deadline = time.monotonic() + float(self.get_argument("timeout", "0"))
        # Heartbeats change the job without adding events: wait for events, not any change.
        while len(self.coord.events) <= since and self.coord.state not in TERMINAL_JOB_STATES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.wait_change(left)
        self.finish({"events": self.coord.events[since:], "next": len(self.coord.events)})


class LogsHandler(BaseHandler):
    def get(self) -> None:
        task = self.get_argument("task")
        attempt = int(self.get_argument("attempt", "0")) or self.coord.attempt
        offset = int(self.get_argument("offset", "0"))
        limit = int(self.get_argument("limit", str(1 << 20)))
        path = self.coord.log_path(task, attempt)
        data = b""
        if path.exists():
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(limit)
        text = data.decode("utf-8", errors="replace")
        self.finish({"task": task, "attempt": attempt, "offset": offset + len(data), "text": text})


class ResultHandler(BaseHandler):
    def get(self) -> None:
        self.finish({"state": self.coord.state, "result": self.coord.result})


class KillHandler(BaseHandler):
    def post(self) -> None:
        self.coord.kill(self.body().get("reason") or "killed on request")
        self.finish({"state": self.coord.state})


class ReleaseHandler(BaseHandler):
    def post(self) -> None:
        self.am.released = True
        self.finish({"ok": True})


class EndpointHandler(BaseHandler):
    """A task registers a named endpoint (e.g. TensorBoard) that the job exposes."""

    def post(self) -> None:
        b = self.body()
        self.coord.endpoints[str(b["name"])] = str(b["url"])
        self.coord.emit("endpoint", name=b["name"], url=b["url"])
        self.coord.provider.endpoint_registered(str(b["name"]), str(b["url"]))
        self.finish({"ok": True})


class RegisterHandler(BaseHandler):
    def post(self) -> None:
        b = self.body()
        try:
            self.coord.register(
                b["task"],
                int(b["attempt"]),
                b["host"],
                int(b["port"]),
                int(b["pid"]),
                b.get("container"),
            )
        except StaleAttempt as e:
            return self.stale(e)
        self.finish({"ok": True})


class ClusterSpecHandler(BaseHandler):
    async def get(self) -> None:
        task, attempt = self.get_argument("task"), int(self.get_argument("attempt"))
        deadline = time.monotonic() + float(self.get_argument("timeout", "10"))
        while True:
            try:
                self.coord.live_task(task, attempt)
            except StaleAttempt as e:
                return self.stale(e)
            if self.coord.cluster_spec is not None or time.monotonic() >= deadline:
                break
            await self.wait_change(deadline - time.monotonic())
        self.finish({"cluster_spec": self.coord.cluster_spec})


class HeartbeatHandler(BaseHandler):
    def post(self) -> None:
        b = self.body()
        try:
            self.coord.heartbeat(b["task"], int(b["attempt"]), b.get("progress"), b.get("rss"))
        except StaleAttempt as e:
            return self.stale(e)
        command = self.am.cells.command_for(b["task"]) if self.am.cells else None
        self.finish(command or {"command": None})


class ExecutorLogsHandler(BaseHandler):
    def post(self) -> None:
        b = self.body()
        try:
            self.coord.add_logs(b["task"], int(b["attempt"]), b["text"])
        except StaleAttempt as e:
            return self.stale(e)
        self.finish({"ok": True})


class ExecutorResultHandler(BaseHandler):
    def post(self) -> None:
        b = self.body()
        try:
            self.coord.set_result(b["task"], int(b["attempt"]), b)
        except StaleAttempt as e:
            return self.stale(e)
        self.finish({"ok": True})


def make_app(am: AMState) -> web.Application:
    routes = [
        ("job", JobHandler),
        ("events", EventsHandler),
        ("logs", LogsHandler),
        ("result", ResultHandler),
        ("kill", KillHandler),
        ("release", ReleaseHandler),
        ("endpoints", EndpointHandler),
        ("executor/register", RegisterHandler),
        ("executor/cluster-spec", ClusterSpecHandler),
        ("executor/heartbeat", HeartbeatHandler),
        ("executor/logs", ExecutorLogsHandler),
        ("executor/result", ExecutorResultHandler),
    ]
    if am.cells is not None:
        routes += SESSION_ROUTES
    return web.Application([(f"{API}/{p}", h, {"am": am}) for p, h in routes])
