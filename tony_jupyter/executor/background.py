"""The executor's background thread: ships the task's log lines every ``LOG_FLUSH_S`` and hands
the latest progress to the heartbeat sidecar; exits the task if the AM says its attempt is over."""

from __future__ import annotations

import os
import threading

from .. import runtime
from ..core.protocol import CellOutcome, CellResultRequest, LogBatch, Ok
from .capture import LogCapture
from .heartbeat import Heartbeater
from .link import AMLink, Stale

LOG_FLUSH_S = 0.25
MAX_SHIP = 4 << 20  # characters per request


class Background(threading.Thread):
    """Log shipping, and progress for the heartbeat sidecar; exits if the AM says stop."""

    def __init__(self, am: AMLink, logs: LogCapture, beat: Heartbeater):
        super().__init__(daemon=True)
        self.am, self.logs, self.beat = am, logs, beat
        self.stop = threading.Event()
        self.cell: int | None = None  # the session cell running now, for interrupts
        self._ship_lock = threading.Lock()

    def ship_logs(self) -> None:
        with self._ship_lock:  # the main thread ships too (a session, between cells): keep order
            text = self.logs.take()
            # In slices the AM takes (its limit is 16 MiB), after an outage that piled them up.
            for start in range(0, len(text), MAX_SHIP):
                try:
                    batch = text[start : start + MAX_SHIP]
                    body = LogBatch(task=self.am.task, attempt=self.am.attempt, text=batch)
                    self.am.send("executor/logs", body, Ok)
                except OSError:  # the AM did not take them (busy, restarting): the next try does
                    self.logs.give_back(text[start:])
                    raise

    def send_with_logs(self, outcome: CellOutcome, cell: int) -> None:
        """``executor/cell-result`` with what is left of the log as ``logs``, under the
        shipping lock: a session cell's output and its result in one request, the output
        first on the AM's side."""
        am = self.am
        with self._ship_lock:
            body = CellResultRequest.carrying(
                outcome, task=am.task, attempt=am.attempt, cell=cell, logs=self.logs.take()
            )
            am.send("executor/cell-result", body, Ok)

    def flush(self) -> None:
        """At the end (or a hard exit): stop shipping in the background, ship the rest."""
        self.stop.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5)
        self.logs.close()
        try:
            self.ship_logs()
        except (Stale, OSError):
            pass

    def run(self) -> None:
        while not self.stop.wait(LOG_FLUSH_S):
            self.beat.update(runtime.current_progress(), self.cell)
            try:
                self.ship_logs()
            except Stale:
                os._exit(143)
            except OSError:
                pass  # the sidecar decides when the AM is gone; the lines wait in the buffer
