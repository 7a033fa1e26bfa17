"""Which job each notebook cell started: ``GET /tony/api/cells?ids=...``, the newest job of
each cell, from the origin.json the kernel wrote at submission (origin.py), for the server's
user's jobs only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tornado import web

from ..core.errors import TonyError
from ..core.origin import MAX_ID
from ..core.records import Record
from ..launcher.client import JobRecord, list_jobs
from ..launcher.pickclient import open_client

MAX_CELLS = 2000  # one notebook's cells; a longer list is a mistake, refused
_CELL_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")


@dataclass(frozen=True)
class CellJob(Record):
    """The newest job a cell started, as a reopened notebook's view needs it first."""

    cell_id: str
    job_id: str
    state: str  # the job's JobState; "UNKNOWN" when neither its AM nor its records answer
    terminal: bool
    notebook: str  # the notebook it was submitted from ("" when unknown)
    submitted: float


def parse_ids(raw: str) -> list[str]:
    """``ids=a,b,c``: cell ids, each of the characters nbformat's ids use; a 400 naming the
    first bad one otherwise."""
    ids = [i for i in raw.split(",") if i]
    if not ids:
        raise web.HTTPError(400, "name the cells: ?ids=CELL_ID,CELL_ID (the notebook's cell ids)")
    if len(ids) > MAX_CELLS:
        raise web.HTTPError(400, f"ids names {len(ids)} cells; at most {MAX_CELLS} at once")
    for i in ids:
        if len(i) > MAX_ID or not _CELL_ID.match(i):
            shown = i if len(i) <= 40 else i[:28] + f"... ({len(i)} chars)"
            raise web.HTTPError(
                400, f"{shown!r} is not a cell id (letters, digits, '-', '_', up to {MAX_ID})"
            )
    return ids


def cell_jobs(ids: list[str], root: Path | None, owned) -> list[CellJob]:
    """The newest job of each of ``ids`` among this host's records that ``owned(record)``
    allows, with its state (its AM's, or its records' once it has ended). Blocking: run it
    off the server's loop."""
    wanted = set(ids)
    newest: dict[str, tuple[float, JobRecord, str]] = {}
    for rec in list_jobs(root):
        origin = rec.origin()
        if origin is None or origin.cell_id not in wanted or not owned(rec):
            continue
        seen = newest.get(origin.cell_id)
        if seen is None or (origin.submitted, rec.id) > (seen[0], seen[1].id):
            newest[origin.cell_id] = (origin.submitted, rec, origin.notebook)
    out = []
    for cell_id, (submitted, rec, notebook) in newest.items():
        try:
            snap = open_client(rec).snapshot()
            state, terminal = str(snap.state), snap.terminal
        except (TonyError, OSError):
            state, terminal = "UNKNOWN", False
        out.append(CellJob(cell_id, rec.id, state, terminal, notebook, submitted))
    return sorted(out, key=lambda c: ids.index(c.cell_id))
