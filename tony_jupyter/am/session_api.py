"""The AM's session endpoints: the notebook submits cells, executors fetch and report them."""

from __future__ import annotations

import time

from tornado import web

from ..protocol import CellState
from .cells import CellQueue
from .coordinator import StaleAttempt
from .http import BaseHandler


class SessionHandler(BaseHandler):
    @property
    def cells(self) -> CellQueue:
        queue = self.am.cells
        assert queue is not None  # these routes exist only in a session's AM (api.make_app)
        return queue


class CellsHandler(SessionHandler):
    def post(self) -> None:
        b = self.body()
        try:
            cell = self.cells.submit(
                b["source"], b["names"], list(b.get("pull", [])), b.get("filename", "<tony-cell>")
            )
        except ValueError as e:
            raise web.HTTPError(409, str(e)) from None
        self.finish(cell.view())

    def get(self) -> None:
        self.finish({"cells": [c.view() for c in self.cells.cells]})


class CellHandler(SessionHandler):
    async def get(self, cell_id: str) -> None:
        """The cell; with ``timeout``, waits (long-poll) until it is done or anything changes."""
        cell = self._cell(cell_id)
        timeout = float(self.get_argument("timeout", "0"))
        if timeout > 0 and cell.state in (CellState.PENDING, CellState.RUNNING):
            await self.wait_change(timeout)
        self.finish(cell.view(with_value=True))

    def _cell(self, cell_id: str):
        try:
            return self.cells.get(int(cell_id))
        except (KeyError, ValueError):
            raise web.HTTPError(404, f"no cell {cell_id}") from None


class InterruptHandler(CellHandler):
    def post(self, cell_id: str) -> None:
        self._cell(cell_id)
        self.finish(self.cells.interrupt(int(cell_id)).view())


class StopHandler(SessionHandler):
    def post(self) -> None:
        self.coord.stop(self.body().get("reason") or "session stopped")
        self.finish({"state": self.coord.state})


class NextCellHandler(SessionHandler):
    async def get(self) -> None:
        task, attempt = self.get_argument("task"), int(self.get_argument("attempt"))
        after = int(self.get_argument("after", "0"))
        deadline = time.monotonic() + float(self.get_argument("timeout", "10"))
        while True:
            try:
                self.coord.live_task(task, attempt)
            except StaleAttempt as e:
                return self.stale(e)
            cell = self.cells.next_for(task, after)
            if cell is not None or time.monotonic() >= deadline:
                break
            await self.wait_change(deadline - time.monotonic())
        if cell is None:
            self.finish({"cell": None})
            return
        self.finish(
            {
                "cell": {
                    "id": cell.id,
                    "source": cell.source,
                    "names": cell.names,
                    "pull": cell.pull,
                    "filename": cell.filename,
                }
            }
        )


class CellResultHandler(SessionHandler):
    def post(self) -> None:
        b = self.body()
        try:
            self.coord.live_task(b["task"], int(b["attempt"]))
        except StaleAttempt as e:
            return self.stale(e)
        outcome = {k: v for k, v in b.items() if k not in ("task", "attempt", "cell")}
        self.cells.report(b["task"], int(b["cell"]), outcome)
        self.finish({"ok": True})


ROUTES = [
    ("cells", CellsHandler),
    (r"cells/(\d+)", CellHandler),
    (r"cells/(\d+)/interrupt", InterruptHandler),
    ("stop", StopHandler),
    ("executor/next-cell", NextCellHandler),
    ("executor/cell-result", CellResultHandler),
]
