"""The executor's link to its AM: every call carries this task's token and its attempt;
the AM answers 410 when the attempt is over, which surfaces here as :class:`Stale`
(amcall.py: the retry and the statuses' meaning, as the job client's).

HTTP/1.1 on one kept-alive socket, by hand: the AM (tornado) answers every call with a JSON body
and a Content-Length, and ``requests`` (with urllib3, charset detection, certifi) costs an
executor ~0.15 s of CPU to import, before the task's user code can start, and ~1 ms per call.
Any failure to reach the AM raises :class:`LinkError` (an ``OSError``)."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from ..core import amcall
from ..core.protocol import Beat, HeartbeatAnswer
from ..core.records import Record

R = TypeVar("R", bound=Record)

MAX_ANSWER = 200 << 20  # the AM's largest answer: a session cell with its pushed names


Stale = amcall.Stale  # the AM says this attempt is over


class LinkError(OSError):
    """The AM could not be reached, or answered with an error."""


class AMLink:
    def __init__(self, url: str, token: str, task: str, attempt: int):
        self.url, self.task, self.attempt = url.rstrip("/"), task, attempt
        self.token = token
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path.rstrip("/") + "/api/v1/"
        self._head = f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        # A socket per thread: the main thread's long-polls must not hold up the log shipper.
        self._local = threading.local()

    def use_token(self, token: str) -> None:
        """From now on, authenticate with ``token`` (the task's own, which register answers
        with); the kept-alive socket is closed, so a fork made next shares none."""
        self.token = token
        self._head = f"Host: {urlsplit(self.url).netloc}\r\nAuthorization: Bearer {token}\r\n"
        self._close()

    def call(self, method: str, path: str, timeout: float = 10, **kw) -> dict:
        """``method /api/v1/path`` with ``params=`` (the query) or ``json=`` (the body)."""
        target = self.prefix + path
        if kw.get("params"):
            target += "?" + urlencode(kw["params"])
        body = b"" if kw.get("json") is None else json.dumps(kw["json"]).encode()
        request = (
            f"{method} {target} HTTP/1.1\r\n{self._head}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        # A kept-alive socket the AM closed meanwhile fails at once: a GET is tried again, on
        # a new socket. A garbled status line counts as no answer too.
        try:
            status, data = amcall.call(
                lambda: self._exchange(request, timeout),
                method=method,
                lost=(OSError, ValueError, IndexError),
                on_lost=self._close,
            )
        except amcall.Unanswered as e:
            raise LinkError(f"{method} {path}: {e.__cause__}") from e.__cause__
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            raise LinkError(f"{method} {path}: {status}, not JSON: {data[:200]!r}") from None
        try:
            amcall.check(status, answer.get("error", ""))
        except amcall.Refused as e:
            raise LinkError(f"{method} {path}: {e.status} {e.error}") from None
        return answer

    def post(self, path: str, **body) -> dict:
        return self.call("POST", path, json={"task": self.task, "attempt": self.attempt, **body})

    def send(self, path: str, body: Record, answer: type[R]) -> R:
        """``POST path`` with ``body`` (its record names this task and attempt): the answer
        read as ``answer``."""
        return answer.from_json(self.call("POST", path, json=body.to_json()))

    def ask(self, path: str, answer: type[R], wait: float, **params: Any) -> R:
        """``GET path`` for this task and attempt, a long-poll of up to ``wait`` seconds: the
        answer read as ``answer``."""
        query = {"task": self.task, "attempt": self.attempt, **params, "timeout": wait}
        return answer.from_json(self.call("GET", path, timeout=wait + 10, params=query))

    def _exchange(self, request: bytes, timeout: float) -> tuple[int, bytes]:
        conn = self._local
        if getattr(conn, "sock", None) is None:
            conn.sock = socket.create_connection((self.host, self.port), timeout=timeout)
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.file = conn.sock.makefile("rb")
        conn.sock.settimeout(timeout)
        conn.sock.sendall(request)
        status_line = conn.file.readline(65537)
        if not status_line:
            raise ConnectionResetError("the AM closed the connection")
        status = int(status_line.split()[1])
        length, close = 0, False
        while (line := conn.file.readline(65537)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if length > MAX_ANSWER:
            raise LinkError(f"an answer of {length} bytes")
        data = conn.file.read(length)
        if len(data) < length:
            raise ConnectionResetError("the AM closed the connection mid-answer")
        if close:
            self._close()
        return status, data

    def _close(self) -> None:
        conn = self._local
        if getattr(conn, "sock", None) is not None:
            conn.file.close()
            conn.sock.close()
        conn.sock = conn.file = None


class BeatStream:
    """Heartbeats on one kept-open connection to the AM (the AM's am/beats.py has the wire):
    a line out, a line back. Any trouble raises OSError; the caller goes back to HTTP."""

    def __init__(self, link: AMLink, port: int, token: str, timeout: float):
        host = urlsplit(link.url).hostname or "127.0.0.1"
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        hello = {"task": link.task, "attempt": link.attempt, "token": token}
        if "ok" not in self._exchange(hello):
            self.close()
            raise ConnectionRefusedError("the AM refused the heartbeat stream")

    def _exchange(self, body: dict) -> dict:
        self.sock.sendall(json.dumps(body, separators=(",", ":")).encode() + b"\n")
        line = self.reader.readline(1 << 20)
        if not line.endswith(b"\n"):
            raise ConnectionResetError("the AM closed the heartbeat stream")
        try:
            return json.loads(line)
        except ValueError:
            raise ConnectionAbortedError("the AM's heartbeat answer is not JSON") from None

    def beat(self, beat: Beat) -> HeartbeatAnswer:
        answer = self._exchange(beat.to_json())
        if answer.get("status") == amcall.STALE or "error" in answer:
            self.close()
            try:
                amcall.check(answer.get("status") or 500, answer.get("error", ""))
            except amcall.Refused as e:  # any other refusal: back to HTTP, which says more
                raise ConnectionAbortedError(e.error) from None
        return HeartbeatAnswer.from_json(answer)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()
