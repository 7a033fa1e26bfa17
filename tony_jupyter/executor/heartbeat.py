"""Heartbeats from a forked sidecar process, not from a thread of the task's process.

A thread cannot beat while the task's interpreter holds the GIL, and loading TensorFlow's
libraries holds it for seconds (tens of seconds on a loaded machine): heartbeats from a thread
then go missing although the task is fine. The sidecar beats while the task process exists and
is not stopped (SIGSTOP, a debugger: a hung task goes silent), with the progress the task last
handed it through a pipe. It also carries the AM's answers back: "stop" (the attempt is over)
and "interrupt" (a session cell).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from ..core import tokens
from ..core.protocol import Beat, HeartbeatAnswer, HeartbeatRequest, Ok, Resources, StacksReport
from .link import AMLink, BeatStream, Stale

# How long a task the AM refused (410) has after its SIGTERM before it is killed.
STOP_GRACE_S = 5.0


class Heartbeater:
    """The task side: hands progress (and the running session cell) to the sidecar."""

    def __init__(self, write_fd: int, command_fd: int, pid: int):
        self.write_fd, self.command_fd, self.pid = write_fd, command_fd, pid
        self._last = b""

    @classmethod
    def fork(
        cls, link, interval: float, give_up_s: float, stacks_fd: int | None = None
    ) -> Heartbeater:
        """Fork the sidecar now: before the task starts a thread (fork copies only this one)
        or opens a connection (the child must not share the parent's sockets). ``stacks_fd``:
        where the task's stack dumps go (stacks.py), which the sidecar reads on request."""
        progress_r, progress_w = os.pipe()
        command_r, command_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the sidecar
            os.close(progress_w)
            os.close(command_r)
            try:
                _beat(link, parent, progress_r, command_w, interval, give_up_s, stacks_fd)
            finally:
                os._exit(0)
        os.close(progress_r)
        os.close(command_w)
        os.set_blocking(command_r, False)
        return cls(progress_w, command_r, pid)

    def update(self, progress: dict, cell: int | None = None) -> None:
        line = json.dumps({"progress": progress, "cell": cell}).encode() + b"\n"
        if line != self._last:
            self._last = line
            os.write(self.write_fd, line)

    def interrupted_cells(self) -> set[int]:
        """Cells the AM asked to interrupt (read by the task's SIGINT handler)."""
        try:
            data = os.read(self.command_fd, 4096)
        except BlockingIOError:
            return set()
        return {int(x) for x in data.split()}


def _beat(
    link,
    parent: int,
    progress_fd: int,
    command_fd: int,
    interval: float,
    give_up_s: float,
    stacks_fd: int | None = None,
) -> None:
    import psutil  # here, in the forked sidecar: the task's start does not wait for it

    from .resources import Sampler

    stopped = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    os.set_blocking(progress_fd, False)
    state: dict[str, Any] = {"progress": {}, "cell": None}
    pending = b""
    served = 0  # the last stack request answered (stacks.py)
    last_ok = time.monotonic()
    stream: BeatStream | None = None
    # A secure cluster's tokens: the version this task has; newer ones go to its file.
    creds_file = os.environ.get(tokens.ENV_FILE)
    have = int(os.environ.get(tokens.ENV_VERSION, "0")) if creds_file else None
    try:
        sampler = Sampler(parent)
    except psutil.NoSuchProcess:
        return

    while True:
        if os.getppid() != parent:
            return  # the task is gone
        try:
            task = psutil.Process(parent)
            status = task.status()
            used = sampler.sample()
        except psutil.NoSuchProcess:
            return
        if status == psutil.STATUS_ZOMBIE:
            return
        read = _read_progress(progress_fd, pending)
        if read is None:
            return  # the task closed its end: it exited
        pending, newest = read
        if newest is not None:
            state = newest
        if status not in stopped:
            try:
                resources = Resources.from_json(used)
                beat = Beat(state["progress"], used["rss_bytes"], resources, have)
                answer, stream = _send(link, stream, interval, beat)
                last_ok = time.monotonic()
                newer = answer.credentials
                if creds_file and newer is not None:
                    tokens.write_credentials(creds_file, newer.to_json())
                    have = newer.version
                cell = answer.cell
                if answer.command == "interrupt" and cell == state["cell"]:
                    os.write(command_fd, f"{cell}\n".encode())
                    os.kill(parent, signal.SIGINT)
                if answer.stacks is not None and answer.stacks != served:
                    served = answer.stacks
                    _send_stacks(link, parent, stacks_fd, served)
            except Stale as e:
                _end_stale(e, parent)
                return
            except OSError:
                if time.monotonic() - last_ok > give_up_s:
                    # The AM is gone (killed, or its host lost): take the task down with us
                    # rather than leave it running as an orphan.
                    os.killpg(os.getpgid(0), signal.SIGKILL)
        time.sleep(interval)


def _read_progress(fd: int, pending: bytes) -> tuple[bytes, dict[str, Any] | None] | None:
    """What the task wrote on its progress pipe since the last read: the bytes of a line not
    yet whole, and its newest whole line's state (None: nothing new); None once it closed
    its end (it exited)."""
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return pending, None
    if not data:
        return None
    *lines, pending = (pending + data).split(b"\n")
    return pending, json.loads(lines[-1]) if lines else None


def _end_stale(e: Stale, parent: int) -> None:
    """The attempt is over (a newer one runs: this host was cut off, say): end the task."""
    print(
        f"[tony] the AM refused this task's heartbeat (410: {e}); ending it",
        file=sys.stderr,
        flush=True,
    )
    os.kill(parent, signal.SIGTERM)
    # With its coordination service on (MultiWorkerMirroredStrategy), TensorFlow installs a
    # SIGTERM handler of its own (a preemption notice: "SIGTERM caught at ...") and trains on:
    # what outlives the grace is killed, as YARN's NodeManager does after its own SIGTERM.
    deadline = time.monotonic() + STOP_GRACE_S
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.1)
    if os.getppid() == parent:
        os.killpg(os.getpgid(0), signal.SIGKILL)


def _send_stacks(link: AMLink, parent: int, fd: int | None, request: int) -> None:
    """The task's stacks for the AM's request ``request`` (or why there are none)."""
    from .stacks import dump

    error: str | None
    if fd is None:
        text, error, seconds = "", "this task's process has no stack dump installed", 0.0
    else:
        text, error, seconds = dump(parent, fd)
    report = StacksReport(
        request=request,
        text=text,
        error=error,
        seconds=round(seconds, 4),
        task=link.task,
        attempt=link.attempt,
    )
    link.send("executor/stacks", report, Ok)


def _send(
    link: AMLink, stream: BeatStream | None, interval: float, beat: Beat
) -> tuple[HeartbeatAnswer, BeatStream | None]:
    """One heartbeat: on the AM's heartbeat stream once its first HTTP answer named the port
    (am/beats.py), by ``POST executor/heartbeat`` before that or when the stream fails."""
    if stream is not None:
        try:
            return stream.beat(beat), stream
        except OSError:
            stream.close()
    body = HeartbeatRequest(
        progress=beat.progress,
        rss=beat.rss,
        resources=beat.resources,
        credentials=beat.credentials,
        task=link.task,
        attempt=link.attempt,
    )
    answer = link.send("executor/heartbeat", body, HeartbeatAnswer)
    port = answer.beats
    if isinstance(port, int):
        try:
            stream = BeatStream(link, port, link.token, timeout=max(10.0, interval * 2))
        except OSError:
            stream = None
    return answer, stream
