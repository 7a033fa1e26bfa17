"""What every AM request handler shares: the token check (before any body is read), bounded
JSON bodies and query arguments that answer 400 rather than 500, the 410 answer to a stale
attempt, and long-poll waits on the coordinator's changes.

Three kinds of secret: the job's token (the notebook side: everything but ``executor/*``),
which the AM knows only by its SHA-256 (protocol.token_verifier), so nothing the AM was
started with lets a task act for the job; each launch's one-time registration secret, good for
``executor/register`` only; and the task's own token that register answers with, which acts for
that task alone (``executor/*`` and ``endpoints``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from tornado import web

from ..core import amcall
from ..core.protocol import ErrorAnswer
from ..core.records import Record
from .coordinator import Coordinator, StaleAttempt
from .task_credentials import Registration, SecretReused, matches

T = TypeVar("T")
R = TypeVar("R", bound=Record)

if TYPE_CHECKING:
    from .sessioncells import CellQueue

API = "/api/v1"
MAX_LONG_POLL_S = 30.0
MAX_BODY = 1 << 20  # most requests: small JSON
# A chief's result, a session's cell with its pushed names: tornado's own default limit.
MAX_RESULT_BODY = 100 << 20
MAX_OFFSET = 1 << 62
_TOKEN_IN_QUERY = re.compile(r"((?:^|[?&])(?:token|access_token)=)[^&]*", re.IGNORECASE)


WAKE_BATCH = 256  # waiters woken per pass of the event loop (Waiters)


def stale_answer(exc: StaleAttempt) -> ErrorAnswer:
    """The one answer to a call of an attempt that is over (a route's, or a heartbeat on the
    beat stream, am/beats.py): 410, and its executor stops (amcall.Stale on its side)."""
    return ErrorAnswer(str(exc), amcall.STALE, command="stop")


class Waiters:
    """Long-polls waiting for a change. ``notify_all`` wakes them ``WAKE_BATCH`` at a time, one
    batch per pass of the event loop: at 10,000 tasks waking every cluster-spec waiter at once
    ran 10,000 answers (~1.4 ms each: the spec is 10,000 entries) before the loop read a socket
    again, and heartbeats waited for them. With no waiter it costs a test of a dict (it runs
    on every heartbeat)."""

    def __init__(self) -> None:
        self._waiters: dict[int, asyncio.Future] = {}
        self._next = 0

    async def wait(self, timeout: float | None = None) -> None:
        waiter = asyncio.get_running_loop().create_future()
        key, self._next = self._next, self._next + 1
        self._waiters[key] = waiter
        try:
            await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            self._waiters.pop(key, None)

    def notify_all(self) -> None:
        if self._waiters:
            waiters, self._waiters = list(self._waiters.values()), {}
            asyncio.get_running_loop().create_task(self._wake(waiters))

    @staticmethod
    async def _wake(waiters: list[asyncio.Future]) -> None:
        for i in range(0, len(waiters), WAKE_BATCH):
            for w in waiters[i : i + WAKE_BATCH]:
                if not w.done():
                    w.set_result(None)
            await asyncio.sleep(0)


class AMState:
    """What the handlers share: the coordinator, the job token's verifier, conditions for
    long-polls: ``changed`` on every change (heartbeats and log batches too), ``turned`` only
    when the job's course changes (the cluster spec handed out, an attempt or a task over),
    which is what a cluster-spec waiter and the AM's main loop wait for."""

    def __init__(self, coordinator: Coordinator, verifier: str):
        self.coordinator, self.verifier = coordinator, verifier
        self.changed = Waiters()
        self.turned = Waiters()
        self._spec_json: tuple[object, bytes] | None = None
        self.released = False
        self.version = 0  # counts the job's changes: a follower's feed waits for the next one
        coordinator.subscribe(self._count_change)
        coordinator.subscribe(self.changed.notify_all)
        coordinator.subscribe(self.turned.notify_all, turns_only=True)
        self.cells: CellQueue | None = None  # a session's cells
        self.beat_port: int | None = None  # the heartbeat streams' port (beats.py)

        spec = coordinator.spec
        self.task_ids = frozenset(spec.task_ids())
        # 256-bit random tokens: a dict lookup on them tells a guesser nothing useful.
        self.credentials = coordinator.credentials

    def _count_change(self) -> None:
        self.version += 1

    def cluster_spec_answer(self) -> bytes | None:
        """``{"cluster_spec": ...}`` encoded once per spec, for every task that asks (10,000
        tasks asking for a 10,000-entry spec: 10,000 encodings of it otherwise)."""
        spec = self.coordinator.cluster_spec
        if spec is None:
            return None
        if self._spec_json is None or self._spec_json[0] is not spec:
            self._spec_json = (spec, json.dumps({"cluster_spec": spec}).encode())
        return self._spec_json[1]

    def task_for(self, token: bytes) -> str | None:
        """The task whose own token this is, or None."""
        return self.credentials.task_for(token)


_WHOLE = re.compile(r"-?[0-9]{1,19}")  # ASCII digits (int() takes "１２" and "1_0" too)


def whole_arg(name: str, raw: str | None, minimum: int = 0) -> int:
    """A query argument's whole number from ``minimum`` to ``MAX_OFFSET``, or 400."""
    if raw is None or not _WHOLE.fullmatch(raw):
        shown = raw if raw is None or len(raw) <= 40 else raw[:28] + f"... ({len(raw)} chars)"
        raise web.HTTPError(400, f"{name} must be a whole number (digits 0-9), not {shown!r}")
    n = int(raw)
    if not minimum <= n <= MAX_OFFSET:
        raise web.HTTPError(400, f"{name} must be between {minimum} and {MAX_OFFSET}")
    return n


def read_at(path, offset: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path`` from ``offset``; none past its end (a seek there,
    e.g. to 2**44 or 2**62, is an OSError or OverflowError of its own)."""
    with open(path, "rb") as f:
        if offset >= os.fstat(f.fileno()).st_size:
            return b""
        f.seek(offset)
        return f.read(limit)


def read_record(data: bytes, record: type[R]) -> R:
    """What a task or the notebook sent (a body, a heartbeat stream's line) as ``record``: a
    ValueError when it is not JSON, nested past what Python's json reads, or naming the
    field that is missing, not of its type or out of its bounds (``Record.parse``)."""
    try:
        b = json.loads(data or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError("body is not JSON") from None
    except RecursionError:
        raise ValueError("body is not JSON this program reads: nested too deeply") from None
    return record.parse(b)


def parse_body(chunks: list[bytes], record: type[R]) -> R:
    """A request's body as ``record``: the one place an AM reads a body. 400 when it is not
    JSON, or naming the field that is missing or not of its type."""
    try:
        return read_record(b"".join(chunks), record)
    except ValueError as e:
        raise web.HTTPError(400, str(e)) from None


def redacted_uri(uri: str) -> str:
    return _TOKEN_IN_QUERY.sub(r"\1[redacted]", uri)


@web.stream_request_body
class RecordHandler(web.RequestHandler):
    """What every AM route does with its body and answer (the job's API here, the warm AM's
    spare routes): a body bounded by ``max_body`` (413 from its Content-Length, before it is
    read, or as it comes) and read as its record; an answer, an error too, written from one."""

    # Per HTTP method, the records of this route's request body and answer (protocol/):
    # a body is read as its record (``parsed``), an answer written from one (``answer``).
    records: ClassVar[dict[str, tuple[type[Record], type[Record]]]] = {}
    max_body = MAX_BODY  # bytes a request to this route may carry

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        super().__init__(*args, **kwargs)

    def bound_body(self) -> None:
        """From ``prepare()``, once the caller is let in: the body's bound."""
        length = self.request.headers.get("Content-Length", "0")
        if not length.isdecimal() or int(length) > self.max_body:
            raise web.HTTPError(413, f"request body over {self.max_body} bytes")
        set_limit = getattr(self.request.connection, "set_max_body_size", None)  # HTTP/1
        if set_limit is not None:
            set_limit(self.max_body)

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self.max_body:
            raise web.HTTPError(413, f"request body over {self.max_body} bytes")
        self._chunks.append(chunk)

    def parsed(self, record: type[R]) -> R:
        """The request's body as ``record`` (:func:`parse_body`)."""
        return parse_body(self._chunks, record)

    def answer(self, record: Record) -> None:
        """Finish with ``record``'s JSON form."""
        self.finish(record.to_json())

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.answer(ErrorAnswer(message, status_code))


@web.stream_request_body
class BaseHandler(RecordHandler):
    executor_route = False  # executor/*: only a task's own token, for that task
    registration_route = False  # executor/register: only a launch's registration secret

    def initialize(self, am: AMState) -> None:
        self.am = am
        self.coord = am.coordinator
        self.task_scope: str | None = None  # the task a task token acts for
        self.registration: Registration | None = None  # the launch a secret was made for
        self.auth_secret = b""

    def prepare(self) -> None:
        """Runs once the headers are in, before the body is read: a request without the
        token is answered now, and its body never buffered."""
        auth = self.request.headers.get("Authorization", "")
        if not auth:
            raise web.HTTPError(401, "missing Authorization: Bearer <job token>")
        scheme, _, token = auth.partition(" ")
        try:
            given = self.auth_secret = token.strip().encode("ascii")
        except UnicodeEncodeError:
            raise web.HTTPError(403, "wrong job token") from None
        if scheme.lower() != "bearer":
            raise web.HTTPError(403, "wrong job token")
        if self.registration_route:
            try:
                self.registration = self.am.credentials.registration(given)
            except SecretReused as e:
                raise web.HTTPError(403, str(e)) from None
            if self.registration is None:
                raise web.HTTPError(403, "register takes the launch's registration secret")
            self.task_scope = self.registration.task
        elif matches(given, self.am.verifier):
            if self.executor_route:
                raise web.HTTPError(403, "executor calls take the task's own token")
        else:
            self.task_scope = self.am.task_for(given)
            if self.task_scope is None:
                raise web.HTTPError(403, "wrong job token")
            if not (self.executor_route or getattr(self, "task_may_call", False)):
                raise web.HTTPError(403, "a task's token is for its executor calls only")
        self.bound_body()

    def _request_summary(self) -> str:
        # tornado's access and error log lines: without a token sent in the query string.
        r = self.request
        return f"{r.method} {redacted_uri(r.uri or '')} ({r.remote_ip})"

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, StaleAttempt):
            stop = stale_answer(exc)
            self.set_status(stop.status or amcall.STALE)
            self.answer(replace(stop, status=None))  # in the status line, not the body
            return
        super().write_error(status_code, **kwargs)

    def log_exception(self, typ, value, tb) -> None:
        if isinstance(value, StaleAttempt):
            return  # a late call of an attempt that is over: answered 410, nothing went wrong
        super().log_exception(typ, value, tb)

    def int_arg(self, name: str, default: int | None = None, minimum: int = 0) -> int:
        raw = self.get_argument(name, None if default is None else str(default))
        return whole_arg(name, raw, minimum)

    def seconds_arg(self, name: str, default: float) -> float:
        raw = self.get_argument(name, str(default))
        try:
            s = float(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be a number of seconds, not {raw!r}") from None
        if not 0 <= s < float("inf"):  # also refuses nan
            raise web.HTTPError(400, f"{name} must be a number of seconds, not {raw!r}")
        return min(s, MAX_LONG_POLL_S)

    def own_task(self, task_id: object) -> str:
        """The task an executor call names: a task token acts for its own task only."""
        if not isinstance(task_id, str):
            raise web.HTTPError(400, "'task' must be a task id such as worker:0")
        if self.task_scope is not None and task_id != self.task_scope:
            raise web.HTTPError(403, f"this token acts for {self.task_scope}, not {task_id}")
        return task_id

    def job_task(self, task: str) -> str:
        """A task id a client names: the job's own only, never a path."""
        if task not in self.am.task_ids:
            known = ", ".join(sorted(self.am.task_ids))
            raise web.HTTPError(404, f"no task {task!r} in this job; its tasks: {known}")
        return task

    def job_attempt(self) -> int:
        """``?attempt=``, the job's current one when absent; 404 for one not reached yet."""
        attempt = self.int_arg("attempt", 0) or self.coord.attempt
        if attempt > max(self.coord.attempt, 1):
            raise web.HTTPError(404, f"no attempt {attempt}; the job is at {self.coord.attempt}")
        return attempt

    def read_log(self, task: str, attempt: int | None, offset: int, limit: int) -> bytes:
        """At most ``limit`` bytes of a task's log for ``attempt`` (None: the task's own), from
        ``offset``."""
        path = self.coord.log_path(task, attempt)
        if not path.exists():
            return b""
        return read_at(path, offset, limit)

    async def wait_change(self, timeout: float, on: Waiters | None = None) -> None:
        """Until the job changes (``on``: turns) or ``timeout`` seconds have passed."""
        await (on or self.am.changed).wait(min(timeout, MAX_LONG_POLL_S))

    async def long_poll_task(
        self,
        task: str,
        attempt: int,
        found: Callable[[], T | None],
        on: Waiters | None = None,
    ) -> T | None:
        """An executor's long-poll (``?timeout=``): ``found()``'s first answer that is not None,
        or None at the deadline; :class:`StaleAttempt` as soon as the task's attempt is over.
        It looks again when ``on`` (default: any change) is notified."""
        deadline = time.monotonic() + self.seconds_arg("timeout", 10)
        while True:
            self.coord.live_task(task, attempt)
            got = found()
            if got is not None or time.monotonic() >= deadline:
                return got
            await self.wait_change(deadline - time.monotonic(), on)
