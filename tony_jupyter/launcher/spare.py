"""The kernel's spare AM (tony_jupyter/warm.py): after a local job started, one AM process is
started, imported and waiting, with spare executors for as many tasks as that job had; the next
job is handed to it instead of starting an interpreter. It dies with the kernel (its stdin is a
pipe from here). ``TONY_JUPYTER_WARM=0`` turns it off."""

from __future__ import annotations

import os
import sys
import threading

from .. import hostenv, warm

# After a job started: its own tasks have the CPU first, then the spare starts.
START_DELAY_S = 0.5

_lock = threading.Lock()
_spare: warm.Spare | None = None
_spare_tasks = 0
_timer: threading.Timer | None = None


def take(env: dict[str, str]) -> warm.Spare | None:
    """The spare, if a fresh AM started now would be the same process; else None (and a spare
    that does not fit is let go)."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is None:
        return None
    if spare.fits(env):
        return spare
    spare.close()
    return None


def replenish(tasks: int, delay: float = START_DELAY_S) -> None:
    """Start the next spare (with ``tasks`` spare executors) in ``delay`` seconds."""
    global _timer
    if not warm.enabled():
        return
    with _lock:
        if _timer is not None:
            _timer.cancel()
        _timer = threading.Timer(delay, start, (tasks,))
        _timer.daemon = True
        _timer.start()


def start(tasks: int) -> None:
    """Start a spare AM now with ``tasks`` spare executors (unless one that fits waits)."""
    global _spare, _spare_tasks
    env = hostenv.without_jupyter(os.environ)  # as launcher/local.py starts an AM
    if not warm.enabled(env):
        return
    with _lock:
        if _spare is not None and _spare.fits(env) and _spare_tasks >= tasks:
            return  # the one waiting will do
        old, _spare = _spare, None
    if old is not None:
        old.close()
    spare = warm.Spare.start([sys.executable, "-m", "tony_jupyter.am", "--spare", str(tasks)], env)
    with _lock:
        old, _spare, _spare_tasks = _spare, spare, tasks
    if old is not None:
        old.close()


def current() -> warm.Spare | None:
    """The spare waiting now, if any."""
    with _lock:
        return _spare


def discard() -> None:
    """Let the spare go (it exits), and start no other."""
    global _spare, _timer
    with _lock:
        spare, _spare = _spare, None
        timer, _timer = _timer, None
    if timer is not None:
        timer.cancel()
    if spare is not None:
        spare.close()
