"""The lifecycle of a process we start: start, readiness probe, stop, re-attach.

One policy for every process tony-jupyter starts (as ipyparallel's launchers and
jupyter-server-proxy's ``SupervisedProcess`` have one):

- ``start`` runs it, in its own session (so its own process group) unless told otherwise, with
  its output appended to a log file;
- ``Process.wait_ready`` waits until a probe (a callable: ``port_open``, ``http_ok``,
  ``file_exists``) says
  it is ready, and tells "exited" from "still not ready" (``Process.poll``);
- ``Process.stop`` sends TERM to its group, waits, then KILLs the group: what it started and
  left in its group goes with it, also when the leader itself exited at the TERM;
- ``ProcRecord`` is what to keep to find it again from another process (``<pid> <start
  time>``): a pid alone may have been recycled, and nothing is ever signalled that we did not
  start.

``Process`` is a ``subprocess.Popen``: code that holds one (poll, wait, stdin, pid) reads it as
before.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

# How far apart two reads of one process's start time may be (psutil rounds it differently
# across reads); a recycled pid's start time differs by far more.
CREATE_TIME_SLACK_S = 1.0


class Process(subprocess.Popen[bytes]):
    """A process we started (``start``), with its group's signals, stop and readiness wait."""

    own_group: bool = False  # started in its own session: its pid is its process group's id

    def signal(self, sig: int) -> None:
        """``sig`` to its process group (its own group's, when it leads one), or to it alone
        (``own_group=False``: it shares its parent's group, which someone else owns). Nothing
        when it is gone."""
        if not self.own_group:
            self.send_signal(sig)  # Popen's: nothing once it was reaped
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 5.0) -> int:
        """TERM, up to ``grace`` seconds for it to exit, then KILL (of the group when it has
        one: also when its leader exited, for what it left there). Its exit code."""
        if self.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill_now()
        return self.returncode

    def kill_now(self) -> int:
        """KILL (its group, when it has one) at once and reap it; its exit code."""
        if self.own_group or self.poll() is None:
            self.signal(signal.SIGKILL)
        return self.wait()

    def wait_ready(self, probe: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
        """``wait_ready`` (below) of this process."""
        return wait_ready(self, probe, timeout, interval)

    def record(self) -> ProcRecord:
        """What to keep to find it again (another process, a later run)."""
        return ProcRecord.of(self.pid)


def wait_ready(
    proc: subprocess.Popen, probe: Callable[[], bool], timeout: float, interval: float = 0.2
) -> bool:
    """Until ``probe()`` is true (True), ``proc`` exits, or ``timeout`` passes (False: its
    ``poll`` tells which). The probe is tried first, so a process ready and gone counts as
    ready."""
    deadline = time.monotonic() + timeout
    while True:
        if probe():
            return True
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(interval)


def start(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    log: Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
    stdout: int | None = None,
    stderr: int | None = None,
    own_group: bool = True,
) -> Process:
    """Start ``argv``. ``log``: its stdout and stderr appended there (else ``stdout`` and
    ``stderr``: None inherits ours). ``own_group``: in its own session (a Ctrl-C at our
    terminal does not reach it; ``stop`` takes its whole group); False where its parent's
    group is owned by someone else, who stops it with that group."""
    opened = open(log, "ab") if log is not None else None  # noqa: SIM115 - closed below
    try:
        proc = Process(
            argv,
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=opened if opened is not None else stdout,
            stderr=subprocess.STDOUT if opened is not None else stderr,
            start_new_session=own_group,
        )
    finally:
        if opened is not None:
            opened.close()  # the child holds its own copy
    proc.own_group = own_group
    return proc


def port_open(host: str, port: int, timeout: float = 0.5) -> Callable[[], bool]:
    """A probe: something accepts TCP connections at ``host:port``."""

    def probe() -> bool:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return True
        except OSError:
            return False

    return probe


def http_ok(url: str, headers: dict[str, str] | None = None) -> Callable[[], bool]:
    """A probe: a GET of ``url`` answers 2xx (a connection refused or slow is not ready)."""
    import requests  # when a probe is made: a process's start does not wait for it

    def probe() -> bool:
        try:
            return requests.get(url, headers=headers, timeout=2).ok
        except requests.RequestException:
            return False

    return probe


def file_exists(path: Path) -> Callable[[], bool]:
    """A probe: ``path`` exists (a process that writes it once it serves)."""
    return path.exists


@dataclass(frozen=True)
class ProcRecord:
    """A process as another process finds it again: its pid and its start time (seconds since
    the epoch, as psutil's ``create_time``, from /proc/PID/stat's 22nd field)."""

    pid: int
    created: float

    @classmethod
    def of(cls, pid: int) -> ProcRecord:
        import psutil  # here: the executor's start, which imports this module, does without

        return cls(pid, psutil.Process(pid).create_time())

    def dumps(self) -> str:
        return f"{self.pid} {self.created}\n"

    @classmethod
    def loads(cls, text: str) -> ProcRecord | None:
        """None for anything but ``<pid> <start time>``."""
        try:
            pid_text, created = text.split()
            return cls(int(pid_text), float(created))
        except ValueError:
            return None

    @classmethod
    def read(cls, path: Path) -> ProcRecord | None:
        try:
            return cls.loads(path.read_text())
        except FileNotFoundError:
            return None

    def write(self, path: Path) -> None:
        path.write_text(self.dumps())

    def attach(self) -> psutil.Process | None:
        """The process this record names, if it is still that same process (not a recycled
        pid) and not a zombie."""
        import psutil

        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.created) > CREATE_TIME_SLACK_S:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
        except psutil.Error:
            return None
        return proc
