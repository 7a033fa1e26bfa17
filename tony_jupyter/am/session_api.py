"""The AM's session endpoints: the notebook submits cells, executors fetch and report them."""

from __future__ import annotations

import json

from tornado import web

from ..core.protocol import (
    CellList,
    CellLog,
    CellResultRequest,
    CellState,
    CellSubmit,
    CellView,
    JobState,
    NextCellAnswer,
    NoBody,
    Ok,
    ReasonBody,
    StateAnswer,
)
from .http import MAX_OFFSET, MAX_RESULT_BODY, BaseHandler
from .sessioncells import CellQueue

MAX_CELL_LOG_READ = 8 << 20  # as GET logs: a bigger log comes in the next polls


class SessionHandler(BaseHandler):
    @property
    def cells(self) -> CellQueue:
        queue = self.am.cells
        assert queue is not None  # these routes exist only in a session's AM (api.make_app)
        return queue

    def _cell(self, cell_id: str):
        try:
            return self.cells.get(int(cell_id))
        except (KeyError, ValueError):
            raise web.HTTPError(404, f"no cell {cell_id}") from None


class CellsHandler(SessionHandler):
    max_body = MAX_RESULT_BODY  # a cell carries the names pushed with it
    records = {"POST": (CellSubmit, CellView), "GET": (NoBody, CellList)}

    def post(self) -> None:
        b = self.parsed(CellSubmit)
        try:
            cell = self.cells.submit(b.source, b.names, list(b.pull), b.filename)
        except ValueError as e:
            raise web.HTTPError(409, str(e)) from None
        self.answer(cell.view())

    def get(self) -> None:
        self.answer(CellList(tuple(c.view() for c in self.cells.cells)))


class CellHandler(SessionHandler):
    records = {"GET": (NoBody, CellView)}

    async def get(self, cell_id: str) -> None:
        """The cell; with ``timeout``, waits (long-poll) until it is done or anything changes.
        With ``feed`` (a JSON object: task -> log offset already read), also the job's snapshot
        and each task's log of this cell from there on: what a widget needs, in one request."""
        cell = self._cell(cell_id)
        timeout = self.seconds_arg("timeout", 0)
        read = self._feed_offsets()
        if timeout > 0 and cell.state in (CellState.PENDING, CellState.RUNNING):
            await self.wait_change(timeout)
        view = cell.view(with_value=True)
        if read is None:
            self.answer(view)
            return
        logs = {
            task: self._cell_log(task, read.get(task, start), cell.log_end.get(task))
            for task, start in cell.log_start.items()
        }
        self.finish(CellView.encode(view, job=self.coord.snapshot_json(), logs=logs))

    def _feed_offsets(self) -> dict[str, int] | None:
        raw = self.get_argument("feed", None)
        if raw is None:
            return None
        try:
            read = json.loads(raw)
        except ValueError:
            read = None
        if not isinstance(read, dict) or not all(
            t in self.am.task_ids and isinstance(o, int) and 0 <= o <= MAX_OFFSET
            for t, o in read.items()
        ):
            raise web.HTTPError(400, "feed must be a JSON object of task id: log offset")
        return read

    def _cell_log(self, task: str, offset: int, end: int | None) -> CellLog:
        """The task's log from ``offset``, up to the cell's end if it has one."""
        data = b""
        if end is None or offset < end:
            limit = MAX_CELL_LOG_READ if end is None else min(end - offset, MAX_CELL_LOG_READ)
            data = self.read_log(task, None, offset, limit)
        return CellLog(data.decode("utf-8", errors="replace"), offset + len(data))


class InterruptHandler(SessionHandler):
    records = {"POST": (NoBody, CellView)}

    def post(self, cell_id: str) -> None:
        self.parsed(NoBody)
        self._cell(cell_id)
        self.answer(self.cells.interrupt(int(cell_id)).view())


class StopHandler(SessionHandler):
    records = {"POST": (ReasonBody, StateAnswer)}

    def post(self) -> None:
        self.coord.stop(self.parsed(ReasonBody).reason or "session stopped")
        self.answer(StateAnswer(JobState(self.coord.state)))


class NextCellHandler(SessionHandler):
    executor_route = True
    records = {"GET": (NoBody, NextCellAnswer)}

    async def get(self) -> None:
        task, attempt = self.own_task(self.get_argument("task")), self.int_arg("attempt")
        after = self.int_arg("after", 0)
        cell = await self.long_poll_task(task, attempt, lambda: self.cells.next_for(task, after))
        self.answer(NextCellAnswer(cell.to_run() if cell is not None else None))


class CellResultHandler(SessionHandler):
    executor_route = True
    max_body = MAX_RESULT_BODY
    records = {"POST": (CellResultRequest, Ok)}

    def post(self) -> None:
        b = self.parsed(CellResultRequest)
        task, attempt, cell_id, logs = self.own_task(b.task), b.attempt, b.cell, b.logs
        self.coord.live_task(task, attempt)
        outcome = b.outcome.to_json()
        try:
            if logs:  # the cell's last output, logged before its result (session_loop.py)
                self.coord.add_logs(task, attempt, logs)
            self.cells.report(task, cell_id, outcome)
        except KeyError:
            raise web.HTTPError(404, f"no cell {cell_id}") from None
        self.answer(Ok())


ROUTES = [
    ("cells", CellsHandler),
    (r"cells/(\d+)", CellHandler),
    (r"cells/(\d+)/interrupt", InterruptHandler),
    ("stop", StopHandler),
    ("executor/next-cell", NextCellHandler),
    ("executor/cell-result", CellResultHandler),
]
