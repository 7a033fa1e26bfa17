"""The warm YARN AM's spare routes (warmpool.py has the pool they serve): the kernel's hand-over
(``job``), a spare executor's ``hello`` and ``task``, and ``status``. Each checks its secret
once the headers are in, before any body is read, and bounds the body; a body that is not JSON
is a 400 naming the problem."""

from __future__ import annotations

import asyncio
from typing import Any

from tornado import routing, web

from ...core import safefiles
from ...core.errors import UnsafeFileError
from ...core.protocol import NoBody, Ok, WarmJob, WarmSecret, WarmStatus, WarmTask
from ..http import RecordHandler
from ..task_credentials import matches
from .warmpool import WarmPool

POLL_S, WAIT_S = 0.02, 25.0
# The hand-over: the job's files, base64 (the shipped directory's archive is at most 8 MiB, the
# cell's pushed names as large as a session cell's: am/http.py's MAX_RESULT_BODY).
MAX_JOB_BODY = 160 << 20


@web.stream_request_body
class _Handler(RecordHandler):
    """A spare route: its secret checked once the headers are in, before any body is read;
    a bounded body, read as its record (400 otherwise)."""

    def initialize(self, pool: WarmPool) -> None:
        self.pool = pool

    def authorized(self, given: str) -> bool:
        return matches(given.encode(), self.pool.verifier)

    def prepare(self) -> None:
        scheme, _, given = self.request.headers.get("Authorization", "").partition(" ")
        try:
            given.encode("ascii")
        except UnicodeEncodeError:
            given = ""
        if scheme.lower() != "bearer" or not given or not self.authorized(given.strip()):
            raise web.HTTPError(403)
        self.bound_body()

    def container(self) -> str:
        return self.get_query_argument("container", "")


class JobHandler(_Handler):
    """The kernel hands the job: its files (base64), once."""

    max_body = MAX_JOB_BODY
    records = {"POST": (WarmJob, Ok)}

    def post(self) -> None:
        files = self.parsed(WarmJob).files
        job = self.pool.job
        if job is None or job.done():
            raise web.HTTPError(409, "this warm AM has its job already")
        try:
            for name in files:  # before the job is taken: a refused one leaves this AM waiting
                safefiles.inside(self.pool.provider.job_dir, name)
        except UnsafeFileError as e:
            raise web.HTTPError(400, str(e)) from None
        job.set_result(files)
        self.pool.closed = True
        self.answer(Ok())


class HelloHandler(_Handler):
    """A spare executor's first call: its launch secret for the secret it polls with."""

    records = {"POST": (NoBody, WarmSecret)}

    def authorized(self, given: str) -> bool:
        self.session = self.pool.hello(self.container(), given)
        return self.session is not None

    def post(self) -> None:
        self.parsed(NoBody)
        assert self.session is not None  # authorized()
        self.answer(WarmSecret(self.session))


class TaskHandler(_Handler):
    """A spare executor waits here for its task (a long poll: 204 when none came yet); a task
    goes to its container only, once."""

    records = {"GET": (NoBody, WarmTask)}

    def authorized(self, given: str) -> bool:
        return self.pool.polls_as(self.container(), given)

    async def get(self) -> None:
        cid = self.container()
        deadline = asyncio.get_running_loop().time() + WAIT_S
        self.pool.waiting.add(cid)
        try:
            while asyncio.get_running_loop().time() < deadline:
                if cid in self.pool.assigned:
                    self.answer(self.pool.assigned.pop(cid))
                    self.pool.fetched.add(cid)
                    return
                if cid in self.pool.released or cid in self.pool.taken_over:
                    raise web.HTTPError(410)
                await asyncio.sleep(POLL_S)
        finally:
            self.pool.waiting.discard(cid)
        self.set_status(204)
        self.finish()


class StatusHandler(_Handler):
    """How many spare executors wait now (ready to be handed a task), and whether a job came."""

    records = {"GET": (NoBody, WarmStatus)}

    def get(self) -> None:
        job = self.pool.job
        handed = bool(job and job.done())
        self.answer(WarmStatus(len(self.pool.waiting), handed))


class WhileOpen(routing.PathMatches):
    """A spare route, there while ``open()`` says so; then the job's API answers (404)."""

    def __init__(self, path: str, open_: Any):
        super().__init__(path)
        self.open = open_

    def match(self, request):
        return super().match(request) if self.open() else None


# The warm AM's spare routes under /api/v1/ (the docs' HTTP API reference is made from this).
ROUTES: list[tuple[str, type[_Handler]]] = [
    ("spare/job", JobHandler),
    ("spare/hello", HelloHandler),
    ("spare/task", TaskHandler),
    ("spare/status", StatusHandler),
]


def router(pool: WarmPool, rest: Any) -> routing.RuleRouter:
    """The spare routes while they are open; everything else (and they, once closed) to
    ``rest``: the job's API once it has its job."""
    spare_api = web.Application([(f"/api/v1/{p}", h, {"pool": pool}) for p, h in ROUTES])
    return routing.RuleRouter(
        [
            routing.Rule(WhileOpen(r"/api/v1/spare/task", lambda: not pool.task_closed), spare_api),
            routing.Rule(
                WhileOpen(r"/api/v1/spare/(?:job|hello|status)", lambda: not pool.closed), spare_api
            ),
            routing.Rule(routing.AnyMatches(), rest),
        ]
    )
