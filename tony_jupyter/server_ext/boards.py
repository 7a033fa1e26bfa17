"""TensorBoard for jobs that have ended: started on demand in the Jupyter server's host from
the event files in the job's history (``tensorboard/`` in its record: the chief's log dir,
which locally is in the job's directory), reached through the same ``/tony/proxy/<job>/
tensorboard/`` as a running job's, and stopped once nobody has used it for ``idle_seconds``.

It is the chief's TensorBoard program (``python -m tony_jupyter.executor.tensorboard``: a
subprocess, TensorFlow's import blocked), bound to 127.0.0.1 and behind the same guard, whose
key only this server holds and sends: another user of this host who finds its port gets 403.
Started by ``supervise.start`` in the server's process group (as it always was: the server's
own end, Ctrl-C included, ends it), stopped by ``supervise.Process.stop`` (TERM, 5 s, KILL).
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import supervise
from ..core.protocol import GuardConfig
from ..launcher.client import JobRecord

READY_TIMEOUT_S = 90.0


@dataclass
class Board:
    proc: supervise.Process
    url: str
    key: str
    used: float


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has_event_files(logdir: Path) -> bool:
    return logdir.is_dir() and any(
        p.name.startswith("events.out.tfevents") for p in logdir.rglob("*")
    )


class FinishedBoards:
    def __init__(self, idle_seconds: float = 600.0, clock=time.monotonic):
        self.idle_seconds, self.clock = idle_seconds, clock
        self.boards: dict[str, Board] = {}
        self.lock = threading.Lock()  # one start per job, however many requests come at once

    def endpoint(self, rec: JobRecord) -> dict | None:
        """``{"url", "key"}`` of the job's TensorBoard, started now if need be; None when its
        history has no event files (or TensorBoard does not come up)."""
        with self.lock:
            board = self.boards.get(rec.id)
            if board is not None and board.proc.poll() is None:
                board.used = self.clock()
                return {"url": board.url, "key": board.key}
            logdir = rec.layout.tensorboard
            if not has_event_files(logdir):
                return None
            board = self._start(rec, logdir)
            if board is None:
                return None
            self.boards[rec.id] = board
            return {"url": board.url, "key": board.key}

    def _start(self, rec: JobRecord, logdir: Path) -> Board | None:
        guard = GuardConfig(secrets.token_urlsafe(32), secrets.token_urlsafe(24), "", False)
        port = _free_port()
        cmd = [
            sys.executable,
            "-m",
            "tony_jupyter.executor.tensorboard",
            *("--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)),
            *("--load_fast", "false"),
        ]
        proc = supervise.start(
            cmd,
            log=rec.dir / "tensorboard-history.log",
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **guard.to_env()},
            own_group=False,
        )
        url = f"http://127.0.0.1:{port}/"
        answers = supervise.http_ok(url + "data/runs", {"Authorization": f"Bearer {guard.key}"})
        if proc.wait_ready(answers, READY_TIMEOUT_S):
            return Board(proc, url, guard.key, self.clock())
        self._stop(proc)
        return None

    @staticmethod
    def _stop(proc: supervise.Process) -> None:
        proc.stop(grace=5)

    def reap(self) -> list[str]:
        """Stop the TensorBoards idle for ``idle_seconds`` (and forget dead ones); their jobs."""
        with self.lock:
            idle = [
                job
                for job, b in self.boards.items()
                if b.proc.poll() is not None or self.clock() - b.used > self.idle_seconds
            ]
            for job in idle:
                self._stop(self.boards.pop(job).proc)
        return idle

    def close(self) -> None:
        with self.lock:
            for b in self.boards.values():
                self._stop(b.proc)
            self.boards.clear()
