"""What every AM request handler shares: the job token check, JSON errors and bodies, the
410 answer to a stale attempt, and long-poll waits on the coordinator's changes."""

from __future__ import annotations

import hmac
import json
from datetime import timedelta
from typing import TYPE_CHECKING

from tornado import locks, web

from .coordinator import Coordinator, StaleAttempt

if TYPE_CHECKING:
    from .cells import CellQueue

API = "/api/v1"
MAX_LONG_POLL_S = 30.0


class AMState:
    """What the handlers share: the coordinator, the token, a condition for long-polls."""

    def __init__(self, coordinator: Coordinator, token: str):
        self.coordinator, self.token = coordinator, token
        self.changed = locks.Condition()
        self.released = False
        coordinator.subscribe(self.changed.notify_all)
        self.cells: CellQueue | None = None  # a session's cells


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
