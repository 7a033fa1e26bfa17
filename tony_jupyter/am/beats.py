"""Heartbeats on a kept-open connection: one TCP stream per executor's sidecar, a JSON line per
heartbeat and a JSON line back, beside the HTTP API (``POST executor/heartbeat``, which stays).

An HTTP request costs the AM ~0.5 ms of CPU in tornado's parsing, routing and handler set-up,
whatever it carries; a heartbeat is a few dozen bytes. On the stream the AM checks the task's
token once, when the sidecar connects, and then spends per heartbeat only a line's parse, the
Coordinator's update and a write. Lines a sidecar sent while the AM was busy are read from one
buffer: the stream coalesces what HTTP would have queued as requests.

The token is looked up again for every line, a dictionary's lookup: a token revoked while its
stream is open (task_credentials.py) ends the stream at its next line, answered 403.

The wire: the sidecar's first line ``{"task": T, "attempt": N, "token": <T's own token>}``,
answered ``{"ok": true}`` (or ``{"error": ..., "status": 403}`` and closed); then per heartbeat
``{"progress": {...}, "rss": N, "credentials": V}`` (each optional), answered as
``POST executor/heartbeat`` would be, ``{"command": "stop", "status": 410}`` when the attempt is
over (then closed). Each line read is answered, in order; lines that arrived together are
answered with one write. The sidecar learns the port from its first HTTP heartbeat's answer
(``"beats"``); any trouble on the stream and it goes back to HTTP for that beat.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from dataclasses import replace

from ..core.protocol import Beat, Credentials, ErrorAnswer, HeartbeatAnswer
from .coordinator import StaleAttempt
from .http import AMState, read_record, stale_answer

MAX_LINE = 1 << 16  # a heartbeat is small; its progress dict is the user's, within reason
NOTHING = b'{"command":null}\n'


def answer_heartbeat(am: AMState, task: str, attempt: int, b: Beat) -> HeartbeatAnswer | None:
    """Record one heartbeat; the answer for the executor, None for "nothing to do".
    :class:`StaleAttempt` when the attempt is over."""
    am.coordinator.heartbeat(task, attempt, b.progress, b.rss, b.resources)
    answer = am.cells.command_for(task) if am.cells else None
    stacks = am.coordinator.stacks.for_task(task)
    if stacks is not None:  # the owner asked for every task's stacks (stacks.py)
        answer = replace(answer or HeartbeatAnswer(), stacks=stacks)
    creds = am.coordinator.provider.credentials()
    if creds is not None and b.credentials is not None and creds["version"] > b.credentials:
        newer = Credentials.checked(creds)  # secure clusters
        answer = replace(answer or HeartbeatAnswer(), credentials=newer)
    return answer


class BeatProtocol(asyncio.Protocol):
    """One sidecar's stream: every complete line in a read is handled, and the answers go back
    in one write (a burst of heartbeats costs one system call each way)."""

    def __init__(self, am: AMState):
        self.am = am
        self.task: str | None = None
        self.token = b""
        self.attempt = 0
        self.pending = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        *lines, self.pending = (self.pending + data).split(b"\n")
        if len(self.pending) > MAX_LINE:
            return self._end(b'{"error":"line too long","status":400}\n')
        out = []
        for line in lines:
            if self.task is None:
                self.task, self.attempt = self._hello(line)
                if self.task is None:
                    return self._end(b'{"error":"wrong job token","status":403}\n')
                out.append(b'{"ok":true}\n')
                continue
            if self.am.task_for(self.token) != self.task:  # revoked since the stream opened
                return self._end(b"".join(out) + b'{"error":"token revoked","status":403}\n')
            try:
                beat = read_record(line, Beat)
                answer = answer_heartbeat(self.am, self.task, self.attempt, beat)
            except StaleAttempt as e:
                return self._end(b"".join(out) + _line(stale_answer(e)))
            except ValueError as e:  # a field of the wrong type, or not JSON
                return self._end(b"".join(out) + _line(ErrorAnswer(str(e), 400)))
            out.append(NOTHING if answer is None else _line(answer))
        if out:
            self.transport.write(b"".join(out))

    def _end(self, last: bytes) -> None:
        assert self.transport is not None
        self.transport.write(last)
        self.transport.close()

    def _hello(self, line: bytes) -> tuple[str | None, int]:
        try:
            hello = json.loads(line)
            token, task, attempt = hello["token"], hello["task"], hello["attempt"]
        except (ValueError, KeyError, TypeError):
            return None, 0
        if not isinstance(token, str) or not isinstance(attempt, int):
            return None, 0
        try:
            self.token = token.encode("ascii")
        except UnicodeEncodeError:
            return None, 0
        owner = self.am.task_for(self.token)
        if owner is None or not hmac.compare_digest(owner, str(task)):
            return None, 0
        return owner, attempt


def _line(record: HeartbeatAnswer | ErrorAnswer) -> bytes:
    return json.dumps(record.to_json()).encode() + b"\n"


async def serve_beats(am: AMState, host: str) -> asyncio.AbstractServer:
    """The heartbeat streams of a job's executors, on the AM's loop; ``am.beat_port`` set."""
    loop = asyncio.get_running_loop()
    # Each executor's stream connects in the burst of a job's start (main.py's BACKLOG).
    server = await loop.create_server(lambda: BeatProtocol(am), host, 0, backlog=4096)
    am.beat_port = server.sockets[0].getsockname()[1]
    return server
