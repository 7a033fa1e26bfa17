"""Start daemons detached and stop them again, tracked only through their pid files.

A pid file holds a ``supervise.ProcRecord`` (``<pid> <create_time>``): a pid alone may have
been reused by an unrelated process after a crash or reboot, and `down` must never signal
anything it did not start. The daemons are started by ``supervise.start``; they are stopped
here, from their records (by `down`, another process than the one that started them), all
at once and with their descendants in other sessions (a NodeManager's containers).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil

from tony_jupyter.core import supervise


def read_pid(pid_file: Path) -> tuple[int, float] | None:
    entry = supervise.ProcRecord.read(pid_file)
    return None if entry is None else (entry.pid, entry.created)


def live_process(pid_file: Path) -> psutil.Process | None:
    """The process the pid file names, if it is still that same process and not a zombie."""
    entry = supervise.ProcRecord.read(pid_file)
    return None if entry is None else entry.attach()


def is_stale(pid_file: Path) -> bool:
    return pid_file.exists() and live_process(pid_file) is None


def start(cmd: list[str], env: dict[str, str], log_file: Path, pid_file: Path) -> int:
    """Launch ``cmd`` in its own session (so a Ctrl-C at the terminal does not reach it)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    # Keep the previous run's log for a post-mortem, but no more: logs never grow without bound.
    if log_file.exists():
        log_file.replace(log_file.with_name(log_file.name + ".1"))
    proc = supervise.start(cmd, env=env, log=log_file)
    proc.record().write(pid_file)
    return proc.pid


def stop_all(pid_files: list[Path], timeout: float = 10.0) -> list[Path]:
    """SIGTERM the processes the pid files name, together with their descendants; SIGKILL what
    is left after ``timeout``; remove the pid files. Returns the pid files that named a live
    process.

    All at once, because a daemon waiting on a dead peer (an NM retrying the RM) can take the
    whole timeout. Descendants matter for NodeManagers: containers are their children (in new
    sessions), and an NM that had to be killed leaves them behind.
    """
    daemons: list[psutil.Process] = []
    family: list[psutil.Process] = []
    stopped = []
    for pid_file in pid_files:
        proc = live_process(pid_file)
        if proc is not None:
            stopped.append(pid_file)
            daemons.append(proc)
            family.append(proc)
            try:
                family.extend(proc.children(recursive=True))
            except psutil.Error:
                pass
    _signal_all(daemons, signal.SIGTERM)
    alive = _wait_gone(daemons, timeout)
    # A clean NM shutdown stops its containers itself; give that a moment before killing.
    alive = _wait_gone(family, 0 if alive else 2.0)
    _signal_all(alive, signal.SIGKILL)
    _wait_gone(alive, 5.0)
    for pid_file in pid_files:
        pid_file.unlink(missing_ok=True)
    return stopped


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """``psutil.wait_procs``, except that a zombie counts as gone: a daemon that another process
    started (`up` inside pytest, `down` from the CLI) stays a zombie until that process reaps
    it, and wait_procs would wait out its whole timeout for it. Returns those still alive."""
    deadline = time.monotonic() + timeout
    alive = procs
    while True:
        _, alive = psutil.wait_procs(alive, timeout=0.1)  # reaps our own children
        alive = [p for p in alive if not _is_zombie(p)]
        if not alive or time.monotonic() >= deadline:
            return alive


def _is_zombie(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _signal_all(procs: list[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            pass


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
