"""A session's cells on the wire: the notebook submits one (``POST cells``) and follows it
(``GET cells/<id>``); each executor fetches it (``GET executor/next-cell``) and reports its
outcome (``POST executor/cell-result``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import Record
from .executor import CellOutcome, TaskCall
from .states import DONE_CELL_STATES, CellState
from .views import JobSnapshot


@dataclass(frozen=True)
class CellSubmit(Record):
    """``POST cells``: a cell for every tracked task of the session."""

    source: str
    names: str  # base64 cloudpickle of the pushed names, as the executor unpickles it
    pull: tuple[str, ...] = ()
    filename: str = "<tony-cell>"


@dataclass(frozen=True)
class CellLog(Record):
    """A task's log of one cell, from the offset the follower had read."""

    text: str
    offset: int


@dataclass(frozen=True)
class CellView(Record):
    """A cell as the AM keeps it (its source and pushed names left out). ``results`` holds
    each task's outcome (the chief's value only when asked, ``with_value``); ``job`` and
    ``logs`` come only when a follower asks for them (``?feed=``)."""

    id: int
    pull: tuple[str, ...] = ()
    filename: str = ""
    state: CellState = CellState.PENDING
    submitted: float = 0.0
    finished: float | None = None
    interrupt: bool = False
    results: dict[str, CellOutcome] = field(default_factory=dict)  # task -> its outcome
    log_start: dict[str, int] = field(default_factory=dict)  # task -> log offset at start
    log_end: dict[str, int] = field(default_factory=dict)
    dropped: str | None = None  # why its values are no longer held (the session's bound)
    job: JobSnapshot | None = None
    logs: dict[str, CellLog] | None = None

    @property
    def done(self) -> bool:
        return self.state in DONE_CELL_STATES

    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        for k in ("job", "logs"):  # there only when a follower asked for them
            if d[k] is None:
                del d[k]
        return d


@dataclass(frozen=True)
class CellList(Record):
    """``GET cells``: every cell of the session."""

    cells: tuple[CellView, ...] = ()


@dataclass(frozen=True)
class CellToRun(Record):
    """A cell as an executor runs it."""

    id: int
    source: str
    names: str
    pull: tuple[str, ...] = ()
    filename: str = "<tony-cell>"


@dataclass(frozen=True)
class NextCellAnswer(Record):
    """``GET executor/next-cell``: the next cell, or None when none came (a long-poll)."""

    cell: CellToRun | None = None


@dataclass(frozen=True, kw_only=True)
class CellResultRequest(CellOutcome, TaskCall):
    """``POST executor/cell-result``: a task's outcome of a cell, with its last output."""

    cell: int
    logs: str | None = None

    def bound(self) -> None:
        super().bound()
        if self.cell < 0:
            raise ValueError("'cell' must be 0 or more")
