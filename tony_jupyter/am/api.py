"""The AM's versioned HTTP JSON API (tornado). Every request carries the job's secret token."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from urllib.parse import urlparse

from tornado import web

from ..core.protocol import (
    TERMINAL_JOB_STATES,
    ClusterSpecAnswer,
    CredentialsAnswer,
    CredentialsRequest,
    EndpointAnswer,
    EndpointRequest,
    EventsAnswer,
    HeartbeatAnswer,
    HeartbeatRequest,
    JobSnapshot,
    JobState,
    LogBatch,
    LogsAnswer,
    MetricsAnswer,
    NoBody,
    Ok,
    ReasonBody,
    RegisterAnswer,
    RegisterRequest,
    ResultAnswer,
    ResultRequest,
    StacksAnswer,
    StacksReport,
    StateAnswer,
    TaskCall,
    TaskState,
)
from .beats import answer_heartbeat
from .coordinator import ENDPOINT_SECRETS
from .feed import FeedHandler
from .http import API, MAX_RESULT_BODY, AMState, BaseHandler
from .session_api import ROUTES as SESSION_ROUTES
from .task_credentials import SecretReused

MAX_LOG_READ = 8 << 20
ENDPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SECRET = re.compile(r"^[A-Za-z0-9_-]{16,128}$")  # URL-safe: path_key is a path segment

log = logging.getLogger("tony_jupyter.am")


class JobHandler(BaseHandler):
    records = {"GET": (NoBody, JobSnapshot)}

    def get(self) -> None:
        self.finish(self.coord.snapshot_json())  # JobSnapshot's JSON form, built straight


class EventsHandler(BaseHandler):
    records = {"GET": (NoBody, EventsAnswer)}

    async def get(self) -> None:
        since = self.int_arg("since", 0)
        deadline = time.monotonic() + self.seconds_arg("timeout", 0)
        # Heartbeats change the job without adding events: wait for events, not any change.
        while len(self.coord.events) <= since and self.coord.state not in TERMINAL_JOB_STATES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.wait_change(left)
        events = self.coord.events
        self.answer(EventsAnswer(tuple(events[since:]), len(events)))


class LogsHandler(BaseHandler):
    records = {"GET": (NoBody, LogsAnswer)}

    def get(self) -> None:
        task, attempt = self.job_task(self.get_argument("task")), self.job_attempt()
        offset = self.int_arg("offset", 0)
        limit = min(self.int_arg("limit", MAX_LOG_READ), MAX_LOG_READ)
        data = self.read_log(task, attempt, offset, limit)
        text = data.decode("utf-8", errors="replace")
        self.answer(LogsAnswer(task, attempt, offset + len(data), text))


class MetricsHandler(BaseHandler):
    """Each task's series so far (am/metrics.py), as the history's metrics.json keeps them."""

    records = {"GET": (NoBody, MetricsAnswer)}

    def get(self) -> None:
        self.finish(self.coord.metrics.to_json())


class ResultHandler(BaseHandler):
    records = {"GET": (NoBody, ResultAnswer)}

    def get(self) -> None:
        self.answer(ResultAnswer(JobState(self.coord.state), self.coord.result))


class KillHandler(BaseHandler):
    records = {"POST": (ReasonBody, StateAnswer)}

    def post(self) -> None:
        self.coord.kill(self.parsed(ReasonBody).reason or "killed on request")
        self.answer(StateAnswer(JobState(self.coord.state)))


class StacksHandler(BaseHandler):
    """``GET stacks?task=&timeout=``: every running task's Python stacks, all threads (or one
    task's), as each task's sidecar dumps them on its own host (executor/stacks.py); waits up
    to ``timeout`` seconds (default 10) for them. The job token only: a task's token gets 403."""

    records = {"GET": (NoBody, StacksAnswer)}

    async def get(self) -> None:
        one = self.get_argument("task", None)
        running = live_tasks(self.coord)
        if one is not None:
            self.job_task(one)
            if one not in running:
                state = self.coord.tasks[one].state if one in self.coord.tasks else "not started"
                raise web.HTTPError(409, f"{one} is {state}: only a running task has stacks")
            running = [one]
        if not running:
            raise web.HTTPError(
                409, f"no task of this job is running (the job is {self.coord.state})"
            )
        stacks = self.coord.stacks
        request = stacks.ask(running)
        deadline = time.monotonic() + self.seconds_arg("timeout", 10)
        while not stacks.complete and stacks.request == request:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.wait_change(left)
        self.answer(stacks.answer(request, running))


def live_tasks(coord) -> list[str]:
    """The tasks whose process runs and heartbeats: those a stack request goes to."""
    live = (TaskState.REGISTERED, TaskState.RUNNING)
    return sorted(t.id for t in coord.tasks.values() if t.state in live)


class ReleaseHandler(BaseHandler):
    records = {"POST": (NoBody, Ok)}

    def post(self) -> None:
        self.parsed(NoBody)
        self.am.released = True
        self.answer(Ok())


class EndpointHandler(BaseHandler):
    """A task registers a named endpoint (e.g. TensorBoard) that the job exposes. Endpoints are
    facts the AM checks, not claims: an endpoint is a port on the host its provider put the
    task on (am/provider.py ``placement``); a task registers its own endpoints only (never one
    another task registered) and only the chief ``tensorboard``. The job token (the notebook
    side) may register one on the host of any of the job's tasks."""

    task_may_call = True
    records = {"POST": (EndpointRequest, Ok)}

    def post(self) -> None:
        b = self.parsed(EndpointRequest)
        name, url = b.name, b.url
        if not ENDPOINT_NAME.match(name):
            raise web.HTTPError(400, f"endpoint name {name!r}: letters, digits, _ and - only")
        keys = {k: getattr(b, k) for k in ENDPOINT_SECRETS}
        for k, v in keys.items():
            if v is not None and not SECRET.match(v):
                raise web.HTTPError(400, f"endpoint {k}: 16 to 128 of A-Z a-z 0-9 _ -")
        owner = self.task_scope
        host, port = endpoint_address(url)
        if owner is None:
            hosts = {t.host for t in self.coord.tasks.values() if t.host}
        else:
            if name == "tensorboard" and owner != self.coord.spec.chief_id:
                raise web.HTTPError(
                    403, f"only the chief ({self.coord.spec.chief_id}) registers tensorboard"
                )
            held = self.coord.endpoint_owners.get(name)
            if name in self.coord.endpoints and held != owner:
                raise web.HTTPError(
                    403, f"endpoint {name!r} is {held or 'the job'}'s, not {owner}'s"
                )
            own = self.coord.tasks[owner].host
            hosts = {own} if own else set()
        if host not in hosts:
            raise web.HTTPError(
                400, f"endpoint URL {url!r}: not on the host of this job's tasks {sorted(hosts)}"
            )
        self.coord.add_endpoint(
            name, f"http://{host}:{port}/", {k: v for k, v in keys.items() if v}, owner
        )
        self.answer(Ok())


def endpoint_address(url: str) -> tuple[str, int]:
    """``http://host:port/`` → (host, port), or 400: an endpoint is a port on a host, nothing
    more (no path, query, user or password the proxy would carry along)."""
    try:
        parsed = urlparse(url)
        port = parsed.port
    except ValueError:
        parsed, port = None, None
    if (
        parsed is None
        or parsed.scheme != "http"
        or not port
        or not parsed.hostname
        or parsed.path not in ("", "/")
        or parsed.query
        or parsed.fragment
        or parsed.username is not None
        or parsed.password is not None
    ):
        raise web.HTTPError(400, f"endpoint URL {url!r}: expected http://host:port/ and no more")
    return parsed.hostname, port


class CredentialsHandler(BaseHandler):
    """``PUT credentials``: the notebook's newer delegation tokens (a secure cluster's tokens
    outlive their maximum lifetime only this way). The job token only, never a task's."""

    records = {"PUT": (CredentialsRequest, CredentialsAnswer)}

    def put(self) -> None:
        tokens = self.parsed(CredentialsRequest).tokens
        try:
            version = self.coord.provider.update_credentials(tokens)
        except NotImplementedError as e:
            raise web.HTTPError(409, str(e)) from None
        except ValueError as e:
            raise web.HTTPError(400, f"not a delegation token: {e}") from None
        log.info("credentials version %d from the notebook: %s", version, sorted(tokens))
        self.answer(CredentialsAnswer(version))


class EndpointKeyHandler(BaseHandler):
    """``endpoints/<name>``: where an endpoint is and the key its guard takes (TensorBoard's
    bearer credential), for the job token only (the server extension's proxy sends it): a
    task's token, which the code a task runs holds, gets 403."""

    records = {"GET": (NoBody, EndpointAnswer)}

    def get(self, name: str) -> None:
        url = self.coord.endpoints.get(name)
        if url is None or self.coord.state in TERMINAL_JOB_STATES:
            # An ended job's ports are free for anyone to listen on: nothing to send there.
            raise web.HTTPError(404, f"no endpoint {name!r} in this job")
        key = self.coord.endpoint_keys.get(name, {}).get("key")
        self.answer(EndpointAnswer(name, url, key))


class ExecutorHandler(BaseHandler):
    """``executor/*``: an executor acts for its own task only (its task token says which)."""

    executor_route = True

    def task_and_attempt(self, b: TaskCall) -> tuple[str, int]:
        return self.own_task(b.task), b.attempt


class RegisterHandler(ExecutorHandler):
    """An executor's first call: its launch's one-time secret for its task's own token."""

    registration_route = True
    records = {"POST": (RegisterRequest, RegisterAnswer)}

    def post(self) -> None:
        b = self.parsed(RegisterRequest)
        task, attempt = self.task_and_attempt(b)
        assert self.registration is not None  # prepare()
        if attempt != self.registration.attempt:
            raise web.HTTPError(403, f"this secret is for attempt {self.registration.attempt}")
        port, pid = b.port, b.pid
        if not 0 < port < 65536:
            raise web.HTTPError(400, f"not a port: {port!r}")
        # Where the task is, the provider knows: the "host" and "container" a task sends are
        # claims, and a claim would let it point its endpoints (and the proxy) anywhere.
        placed = self.coord.provider.placement(task, attempt)
        if placed is None:
            raise web.HTTPError(409, f"{task} attempt {attempt} was not launched by this AM")
        self.coord.register(task, attempt, placed.host, port, pid, placed.container)
        try:
            token = self.am.credentials.redeem(self.auth_secret)
        except SecretReused as e:
            raise web.HTTPError(403, str(e)) from None
        self.answer(RegisterAnswer(token))


class ClusterSpecHandler(ExecutorHandler):
    records = {"GET": (NoBody, ClusterSpecAnswer)}

    async def get(self) -> None:
        task, attempt = self.own_task(self.get_argument("task")), self.int_arg("attempt")
        spec = await self.long_poll_task(
            task, attempt, self.am.cluster_spec_answer, on=self.am.turned
        )
        if spec is None:
            self.answer(ClusterSpecAnswer(None))
            return
        # ClusterSpecAnswer's JSON form, encoded once for every task that asks (http.py)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(spec)


class HeartbeatHandler(ExecutorHandler):
    records = {"POST": (HeartbeatRequest, HeartbeatAnswer)}

    def post(self) -> None:
        b = self.parsed(HeartbeatRequest)
        task, attempt = self.task_and_attempt(b)
        answer = answer_heartbeat(self.am, task, attempt, b.beat) or HeartbeatAnswer()
        if self.am.beat_port is not None:  # where to go on beating (beats.py)
            answer = replace(answer, beats=self.am.beat_port)
        self.answer(answer)


class ExecutorLogsHandler(ExecutorHandler):
    max_body = 16 << 20
    records = {"POST": (LogBatch, Ok)}

    def post(self) -> None:
        b = self.parsed(LogBatch)
        task, attempt = self.task_and_attempt(b)
        self.coord.add_logs(task, attempt, b.text)
        self.answer(Ok())


class ExecutorResultHandler(ExecutorHandler):
    max_body = MAX_RESULT_BODY
    records = {"POST": (ResultRequest, Ok)}

    def post(self) -> None:
        b = self.parsed(ResultRequest)
        task, attempt = self.task_and_attempt(b)
        self.coord.set_result(task, attempt, b.to_json())
        self.answer(Ok())


class ExecutorStacksHandler(ExecutorHandler):
    """A task's stacks, dumped by its sidecar for the AM's request (core/protocol/stacks.py)."""

    max_body = 8 << 20  # MAX_STACKS_TEXT characters, JSON-escaped
    records = {"POST": (StacksReport, Ok)}

    def post(self) -> None:
        b = self.parsed(StacksReport)
        task, attempt = self.task_and_attempt(b)
        self.coord.live_task(task, attempt)
        if self.coord.stacks.add(b, self.coord.tasks[task].host):
            self.coord.changed()
        self.answer(Ok())


# The AM's routes under /api/v1/, each handler declaring its records; a session's AM adds
# session_api.ROUTES. The docs' HTTP API reference is made from these tables.
ROUTES: list[tuple[str, type[BaseHandler]]] = [
    ("job", JobHandler),
    ("events", EventsHandler),
    ("feed", FeedHandler),
    ("logs", LogsHandler),
    ("metrics", MetricsHandler),
    ("result", ResultHandler),
    ("kill", KillHandler),
    ("stacks", StacksHandler),
    ("release", ReleaseHandler),
    ("endpoints", EndpointHandler),
    ("credentials", CredentialsHandler),
    (f"endpoints/({ENDPOINT_NAME.pattern[1:-1]})", EndpointKeyHandler),
    ("executor/register", RegisterHandler),
    ("executor/cluster-spec", ClusterSpecHandler),
    ("executor/heartbeat", HeartbeatHandler),
    ("executor/logs", ExecutorLogsHandler),
    ("executor/result", ExecutorResultHandler),
    ("executor/stacks", ExecutorStacksHandler),
]


def make_app(am: AMState) -> web.Application:
    routes = ROUTES + (SESSION_ROUTES if am.cells is not None else [])
    return web.Application([(f"{API}/{p}", h, {"am": am}) for p, h in routes])
