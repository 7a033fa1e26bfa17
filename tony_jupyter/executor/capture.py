"""The task's stdout and stderr, captured at the file-descriptor level so that output of
native code (TensorFlow's C++ logging) is shipped too."""

from __future__ import annotations

import array
import fcntl
import os
import select
import sys
import termios
import threading


class LogCapture:
    """Points fds 1 and 2 at a pipe; a thread copies it to the original stdout and a buffer."""

    def __init__(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.orig = os.dup(1)
        r, w = os.pipe()
        os.dup2(w, 1)
        os.dup2(w, 2)
        os.close(w)
        self.read_fd = r
        self.buf: list[str] = []
        self.lock = threading.Lock()
        # Set (under the lock) while the reader waits with the pipe empty and everything it read
        # in the buffer: what drain() waits for, rather than sleeping a fixed time.
        self.idle = threading.Condition(self.lock)
        self._waiting = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115

    def _pending(self) -> int:
        n = array.array("i", [0])
        fcntl.ioctl(self.read_fd, termios.FIONREAD, n, True)
        return n[0]

    def _read(self) -> None:
        readable = select.poll()
        readable.register(self.read_fd, select.POLLIN)
        while True:
            with self.lock:
                if not self._pending():
                    self._waiting = True
                    self.idle.notify_all()
            readable.poll()
            with self.lock:
                self._waiting = False
            chunk = os.read(self.read_fd, 65536)
            if not chunk:
                return
            os.write(self.orig, chunk)
            with self.lock:
                self.buf.append(chunk.decode("utf-8", errors="replace"))

    def drain(self, timeout: float = 1.0) -> None:
        """Wait until what the task has written so far is in the buffer (a session ships a
        cell's output before its result, so the output belongs to that cell)."""
        sys.stdout.flush()
        sys.stderr.flush()
        with self.lock:
            self.idle.wait_for(lambda: self._waiting and not self._pending(), timeout)

    def take(self) -> str:
        with self.lock:
            text, self.buf = "".join(self.buf), []
        return text

    def give_back(self, text: str) -> None:
        """What ``take`` returned and could not be shipped: first in line for the next time."""
        with self.lock:
            self.buf.insert(0, text)

    def close(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.orig, 1)
        os.dup2(self.orig, 2)  # closes the pipe's last write ends, so the reader sees EOF
        self.reader.join(5)
