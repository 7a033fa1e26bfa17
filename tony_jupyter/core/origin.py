"""JobOrigin: where a job was submitted from (the notebook cell's id, the notebook's path),
``origin.json`` in the job's record, so a reopened notebook finds each cell's job again."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .records import Record

# Set by jupyter_server in the environment of a kernel it starts for a notebook: the
# notebook's path relative to the server's root.
SESSION_NAME_ENV = "JPY_SESSION_NAME"
MAX_ID = 256  # a cell id is a short string (nbformat: 1-64 of [a-zA-Z0-9-_]); room to spare


@dataclass(frozen=True)
class JobOrigin(Record):
    cell_id: str = ""  # the cell's id as JupyterLab sends it (``cellId``); "" when unknown
    notebook: str = ""  # the notebook's path as the server knows it; "" when unknown
    submitted: float = 0.0  # time.time() at submission

    def bound(self) -> None:
        if len(self.cell_id) > MAX_ID:
            raise ValueError(f"cell_id is {len(self.cell_id)} characters, over {MAX_ID}")

    @property
    def known(self) -> bool:
        return bool(self.cell_id)


def here() -> JobOrigin:
    """The cell being run in this kernel: ``cellId`` from the execute request's metadata
    (JupyterLab and Notebook 7 send it), the notebook from ``JPY_SESSION_NAME``; empty
    fields outside a kernel or from a front end that sends neither."""
    cell_id = ""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        kernel = getattr(shell, "kernel", None)
        parent = kernel.get_parent() if kernel is not None else {}
        meta = (parent or {}).get("metadata") or {}
        got = meta.get("cellId")
        if isinstance(got, str) and len(got) <= MAX_ID:
            cell_id = got
    except Exception:  # noqa: BLE001 - an old ipykernel, no shell: the origin stays unknown
        cell_id = ""
    return JobOrigin(cell_id, os.environ.get(SESSION_NAME_ENV, ""), time.time())
