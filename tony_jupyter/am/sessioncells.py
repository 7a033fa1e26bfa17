"""The AM's side of an interactive session: a queue of cells that every tracked task runs,
one at a time, in its own persistent namespace.

Bounded for a long session: a cell's pushed names (``names``, as large as what the notebook
pushes) are dropped once every task has taken the cell; the chiefs' values (``results``'
``value`` and ``arrow``) of done cells are kept up to ``HELD_VALUES_BYTES`` in all, the newest
first, and an older cell's are dropped past it (its view says so: ``dropped``). The cells' logs
are on disk (``log_start``/``log_end`` are offsets into them), not held."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from ..core.protocol import (
    DONE_CELL_STATES,
    TERMINAL_JOB_STATES,
    CellOutcome,
    CellState,
    CellToRun,
    CellView,
    EventKind,
    HeartbeatAnswer,
    JobState,
)
from .coordinator import Coordinator

# The values of done cells the AM holds, in all: a re-attach or a retried fetch reads them.
HELD_VALUES_BYTES = 64 << 20
VALUE_KEYS = ("value", "arrow")


@dataclass
class Cell:
    id: int
    source: str
    names: str  # base64 cloudpickle, as the executor unpickles it
    pull: list[str]
    filename: str
    state: str = CellState.PENDING
    submitted: float = 0.0
    finished: float | None = None
    interrupt: bool = False
    results: dict[str, dict] = field(default_factory=dict)  # task -> outcome
    log_start: dict[str, int] = field(default_factory=dict)  # task -> log offset at start
    log_end: dict[str, int] = field(default_factory=dict)
    dropped: str | None = None  # why its values are no longer held (the session's bound)

    def view(self, with_value: bool = False) -> CellView:
        results = {t: CellOutcome.from_json(r) for t, r in self.results.items()}
        if not with_value:
            results = {t: replace(r, value=None, arrow=None) for t, r in results.items()}
        return CellView(
            self.id,
            tuple(self.pull),
            self.filename,
            CellState(self.state),
            self.submitted,
            self.finished,
            self.interrupt,
            results,
            dict(self.log_start),
            dict(self.log_end),
            self.dropped,
        )

    def to_run(self) -> CellToRun:
        return CellToRun(self.id, self.source, self.names, tuple(self.pull), self.filename)


class CellQueue:
    def __init__(self, coordinator: Coordinator):
        self.coord = coordinator
        self.cells: list[Cell] = []
        self._ids = itertools.count(1)
        self.last_activity = coordinator.clock()

    @property
    def runners(self) -> list[str]:
        return [t.id for t in self.coord.tasks.values() if t.tracked]

    def submit(self, source: str, names: str, pull: list[str], filename: str) -> Cell:
        if self.coord.state != JobState.RUNNING:
            raise ValueError(f"the session is {self.coord.state}: {self.coord.reason}")
        cell = Cell(next(self._ids), source, names, pull, filename, submitted=self.coord.clock())
        self.cells.append(cell)
        self.last_activity = self.coord.clock()
        self.coord.emit(EventKind.CELL, cell=cell.id, state=CellState.PENDING)
        return cell

    def get(self, cell_id: int) -> Cell:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def next_for(self, task_id: str, after: int) -> Cell | None:
        """The first cell after ``after`` that this task has not run; cells run in order."""
        if task_id not in self.runners:
            return None
        for c in self.cells:
            if (
                c.id > after
                and task_id not in c.results
                and c.state in (CellState.PENDING, CellState.RUNNING)
            ):
                if c.state == CellState.PENDING:
                    c.state = CellState.RUNNING
                    self.coord.emit(EventKind.CELL, cell=c.id, state=CellState.RUNNING)
                c.log_start.setdefault(task_id, self._log_size(task_id))
                if c.names and set(self.runners) <= set(c.log_start):
                    names, c.names = c.names, ""  # every task has it: no more held here
                    c = replace(c, names=names)  # this answer still carries them
                return c
        return None

    def _log_size(self, task_id: str) -> int:
        path = self.coord.log_path(task_id)
        return path.stat().st_size if path.exists() else 0

    def report(self, task_id: str, cell_id: int, outcome: dict) -> None:
        cell = self.get(cell_id)
        cell.results[task_id] = outcome
        cell.log_end[task_id] = self._log_size(task_id)
        if all(t in cell.results for t in self.runners):
            statuses = {r.get("status") for r in cell.results.values()}
            cell.state = (
                CellState.INTERRUPTED
                if "interrupted" in statuses
                else CellState.FAILED
                if "error" in statuses
                else CellState.SUCCEEDED
            )
            cell.finished = self.coord.clock()
            self.last_activity = cell.finished
            self._bound_values()
            self.coord.emit(EventKind.CELL, cell=cell.id, state=cell.state)
        self.coord.changed()

    def _bound_values(self) -> None:
        """Drop the values of the oldest done cells past HELD_VALUES_BYTES (the newest kept)."""
        held = 0
        for c in reversed([c for c in self.cells if c.finished is not None]):
            size = sum(len(str(r.get(k) or "")) for r in c.results.values() for k in VALUE_KEYS)
            held += size
            if size and held > HELD_VALUES_BYTES and c is not self.cells[-1]:
                for r in c.results.values():
                    for k in VALUE_KEYS:
                        r.pop(k, None)
                c.dropped = (
                    f"its value is no longer held: the session keeps the values of its latest "
                    f"cells up to {HELD_VALUES_BYTES >> 20} MiB in all"
                )

    def command_for(self, task_id: str) -> HeartbeatAnswer | None:
        for c in self.cells:
            if c.state == CellState.RUNNING and c.interrupt and task_id not in c.results:
                return HeartbeatAnswer("interrupt", c.id)
        return None

    def interrupt(self, cell_id: int) -> Cell:
        cell = self.get(cell_id)
        if cell.state in (CellState.PENDING, CellState.RUNNING):
            cell.interrupt = True
            if cell.state == CellState.PENDING:
                cell.state, cell.finished = CellState.INTERRUPTED, self.coord.clock()
            self.coord.emit(EventKind.CELL, cell=cell.id, state="INTERRUPTING")
        return cell

    def tick(self) -> None:
        busy = any(c.state in (CellState.PENDING, CellState.RUNNING) for c in self.cells)
        idle = self.coord.clock() - self.last_activity
        if (
            not busy
            and self.coord.state == JobState.RUNNING
            and idle > self.coord.spec.idle_timeout_s
        ):
            self.coord.stop(
                f"the session was idle for {self.coord.spec.idle_timeout_s:g} s "
                "(--idle-timeout); start it again with %tony session start"
            )
        if self.coord.state in TERMINAL_JOB_STATES:
            for c in self.cells:
                if c.state not in DONE_CELL_STATES:
                    c.state, c.finished = CellState.FAILED, self.coord.clock()
                    c.results.setdefault(
                        "session", {"status": "error", "traceback": self.coord.reason}
                    )
