"""Every thread's Python stack of a task, on the AM's request, read by the task's sidecar.

The task's process registers :mod:`faulthandler` on :data:`SIGNAL` at start, writing into an
unlinked file the sidecar (forked after) shares: the sidecar empties the file, signals the
task and reads the dump back. faulthandler writes from its C signal handler, without waiting
for the interpreter: a task blocked in a collective (gloo, NCCL, gRPC), in ``time.sleep`` or
holding the GIL in a C extension still dumps. A real-time signal, not SIGUSR1/SIGUSR2, which
user code and libraries take for their own.

No ptrace (py-spy's way) is needed, so it works wherever the task runs: the sidecar is the
task's child, which Yama's default scope (1) does not let trace its parent.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import tempfile
import time

# SIGRTMIN+7: no runtime the tasks use (glibc's threads take the first two; Python, TensorFlow,
# PyTorch, JAX, the JVM none) handles it; its default action would end the process, which is why
# the handler is registered before the sidecar exists to send it.
SIGNAL = signal.SIGRTMIN + 7
SETTLE_S = 0.05  # the dump is whole once its size holds this long
MAX_BYTES = 1 << 20


def install() -> int:
    """In the task's process, before the sidecar forks: the file descriptor the dumps go to
    (appended: the sidecar empties it before each request)."""
    fd, path = tempfile.mkstemp(prefix="tony-stacks-")
    try:
        dump_fd = os.open(path, os.O_RDWR | os.O_APPEND)
    finally:
        os.close(fd)
        os.unlink(path)
    faulthandler.register(SIGNAL, file=dump_fd, all_threads=True, chain=False)
    return dump_fd


def dump(pid: int, fd: int, timeout: float = 3.0) -> tuple[str, str | None, float]:
    """In the sidecar: signal the task ``pid`` and read its dump back; (text, error, seconds)."""
    start = time.monotonic()
    os.ftruncate(fd, 0)
    try:
        os.kill(pid, SIGNAL)
    except ProcessLookupError:
        return "", "the task's process has exited", time.monotonic() - start
    size, since = 0, start
    while True:
        time.sleep(0.01)
        now = time.monotonic()
        grown = os.fstat(fd).st_size
        if grown != size:
            size, since = grown, now
        elif size and now - since >= SETTLE_S:
            break
        if now - start > timeout:
            if not size:
                return "", f"no dump within {timeout:g} s", now - start
            break
    data = os.pread(fd, min(size, MAX_BYTES), 0)
    return data.decode("utf-8", errors="replace"), None, time.monotonic() - start
