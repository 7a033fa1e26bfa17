"""What every AM route shares: the empty body, the plain ``{"ok": true}`` answer and the
error answer (am/http.py's ``write_error``; a stale attempt's is a ``stop`` command)."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Record, Sparse


@dataclass(frozen=True)
class NoBody(Record):
    """A request without a body (a GET: its arguments are in the query)."""


@dataclass(frozen=True)
class Ok(Record):
    ok: bool = True


@dataclass(frozen=True)
class ErrorAnswer(Sparse):
    """Any route's answer to a refused request; ``command: "stop"`` with 410 when the task's
    attempt is over (its executor stops)."""

    error: str
    status: int | None = None
    command: str | None = None
