"""The executor's side of an interactive session: fetch a cell, run it in this task's
persistent namespace, report, repeat — until the AM says the session is over."""

from __future__ import annotations

import base64
import os
import signal
import traceback

import cloudpickle

from ..core.protocol import CellOutcome, CellToRun, NextCellAnswer
from .background import Background
from .cell import execute
from .link import AMLink, Stale

POLL_S = 30


def serve(am: AMLink, bg: Background, bundle_dir, is_chief: bool) -> None:
    namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    running: dict = {"cell": None}

    def on_sigint(signum, frame) -> None:
        # The heartbeat sidecar sends a real SIGINT (it also wakes a blocking sleep or wait)
        # after naming the cell; only that cell is interrupted, a late signal is dropped.
        if running["cell"] is not None and running["cell"] in bg.beat.interrupted_cells():
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    after, code = 0, 0
    try:
        while True:
            got = am.ask("executor/next-cell", NextCellAnswer, wait=POLL_S, after=after).cell
            if got is None:
                continue
            after = got.id
            outcome = run_cell(got, namespace, is_chief, running, bg)
            bg.logs.drain()
            # this cell's output is logged before its result, in the same request
            bg.send_with_logs(outcome, cell=got.id)
    except Stale:
        code = 0  # the session ended
    except OSError as e:
        print(f"[tony] lost the AM: {e}", flush=True)
        code = 1
    os._exit(code)  # ships the rest of the logs first (executor/reaper.py)


def run_cell(
    got: CellToRun, namespace: dict, is_chief: bool, running: dict, bg: Background
) -> CellOutcome:
    print(f"[tony] cell {got.id}", flush=True)
    running["cell"] = bg.cell = got.id
    try:
        namespace.update(cloudpickle.loads(base64.b64decode(got.names)))
        return execute(got.source, got.filename, namespace, list(got.pull), is_chief)
    except KeyboardInterrupt:
        traceback.print_exc()
        return CellOutcome("interrupted", traceback.format_exc())
    except BaseException:  # noqa: BLE001 - a failing cell leaves the session usable
        traceback.print_exc()
        return CellOutcome("error", traceback.format_exc())
    finally:
        running["cell"] = bg.cell = None
