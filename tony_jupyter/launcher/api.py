"""The AM's versioned HTTP JSON API (tornado). Every request carries the job's secret token."""

from __future__ import annotations

import hmac
import json
import time
from datetime import timedelta

from tornado import locks, web

from .coordinator import TERMINAL, Coordinator, StaleAttempt

API = "/api/v1"
MAX_LONG_POLL_S = 30.0


class AMState:
    """What the handlers share: the coordinator, the token, a condition for long-polls."""

    def __init__(self, coordinator: Coordinator, token: str):
        self.coordinator, self.token = coordinator, token
        self.changed = locks.Condition()
        self.released = False
        coordinator._listeners.append(self.changed.notify_all)
        self.cells = None  # a CellQueue when the job is an interactive session


class BaseHandler(web.RequestHandler):
    def initialize(self, am: AMState) -> None:
        self.am = am
        self.coord = am.coordinator

    def prepare(self) -> None:
        auth = self.request.headers.get("Authorization", "")
        if not auth:
            raise web.HTTPError(401, "missing Authorization: Bearer <job token>")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token, self.am.token):
            raise web.HTTPError(403, "wrong job token")

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.finish({"error": message, "status": status_code})

    def body(self) -> dict:
        try:
            return json.loads(self.request.body or b"{}")
        except json.JSONDecodeError:
            raise web.HTTPError(400, "body is not JSON") from None

    def stale(self, e: StaleAttempt) -> None:
        self.set_status(410)
        self.finish({"command": "stop", "error": str(e)})

    async def wait_change(self, timeout: float) -> None:
        await self.am.changed.wait(timeout=timedelta(seconds=min(timeout, MAX_LONG_POLL_S)))


class JobHandler(BaseHandler):
    def get(self) -> None:
        self.finish(self.coord.snapshot())


class EventsHandler(BaseHandler):
    async def get(self) -> None:
        since = int(self.get_argument("since", "0"))
        deadline = time.monotonic() + float(self.get_argument("timeout", "0"))
        # Heartbeats change the job without adding events: wait for events, not any change.
        while len(self.coord.events) <= since and self.coord.state not in TERMINAL:
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
                self.coord._task(task, attempt)
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
        from .session_api import ROUTES

        routes += ROUTES
    return web.Application([(f"{API}/{p}", h, {"am": am}) for p, h in routes])
