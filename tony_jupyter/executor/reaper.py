"""What a task leaves behind: the processes it started, also those that daemonised
themselves (fork, setsid, fork: out of the task's process group), and its last output.

The executor is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): an orphaned descendant
is re-parented to it rather than to init, so it stays in the executor's process tree and is
killed with the task. The local backend also sweeps by the task's ``TONY_*`` environment once an
executor is gone (am/local.py), for a task that ended too abruptly to clean up itself.
"""

from __future__ import annotations

import ctypes
import os
from typing import NoReturn

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def kill_descendants(timeout: float = 2.0) -> None:
    """SIGKILL every process under this one (the task's daemons, the heartbeat sidecar)."""
    import psutil  # at the task's end only: its start does not wait for it

    try:
        procs = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=timeout)


def flush_before_exit(flush) -> None:
    """Route ``os._exit`` (the user's, and ours) through ``flush`` first: the last lines a
    task printed before a hard exit are in its stdout and the shipped log too."""
    real_exit, executor = os._exit, os.getpid()

    def _exit(status: int) -> NoReturn:
        if os.getpid() != executor:  # a forked child (multiprocessing): not the task's end
            real_exit(status)
        try:
            flush()
        finally:
            kill_descendants()
            real_exit(status)

    os._exit = _exit
