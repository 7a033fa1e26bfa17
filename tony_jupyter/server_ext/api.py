"""``/tony/api/jobs...``: the user's jobs (local and YARN, also those of dead kernels)."""

from __future__ import annotations

import re

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..core.errors import TonyError
from ..core.protocol import EventsAnswer
from .cells import cell_jobs, parse_ids
from .config import TonyJupyter
from .detail import job_detail, job_stacks
from .jobs import JOB_ID, ServerJobs

AUTH_RESOURCE = "tony"
SETTINGS_KEY = "tony_jupyter"  # the TonyJupyter config; "tony_jupyter.jobs": ServerJobs
MAX_OFFSET = 1 << 62


class TonyAPIHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def tony_config(self) -> TonyJupyter:
        return self.settings[SETTINGS_KEY]

    @property
    def jobs(self) -> ServerJobs:
        return self.settings[SETTINGS_KEY + ".jobs"]

    def int_argument(self, name: str, default: int) -> int:
        value = self.get_argument(name, str(default))
        if not re.fullmatch(r"[0-9]{1,19}", value):  # ASCII digits: int() takes "１２" too
            shown = value if len(value) <= 40 else value[:28] + f"... ({len(value)} chars)"
            raise web.HTTPError(400, f"{name} must be a whole number (digits 0-9), not {shown!r}")
        n = int(value)
        if not 0 <= n <= MAX_OFFSET:
            raise web.HTTPError(400, f"{name} must be between 0 and {MAX_OFFSET}")
        return n

    async def call(self, fn, *args):
        try:
            return await self.jobs.blocking(fn, *args)
        except TonyError as e:
            raise web.HTTPError(502, f"the job's AM: {e}") from None


class JobsHandler(TonyAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish({"jobs": await self.jobs.summaries()})


class CellsHandler(TonyAPIHandler):
    """``?ids=CELL,CELL``: the newest job each of these notebook cells started, with its
    state (cells.py); the server's user's jobs only. What a reopened notebook, or one whose
    kernel restarted, asks to show each cell's job again."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        ids = parse_ids(self.get_argument("ids", ""))
        jobs = self.jobs
        found = await jobs.blocking(cell_jobs, ids, jobs.root, jobs.owns)
        self.finish({"cells": [c.to_json() for c in found]})


class JobHandler(TonyAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        snap = await self.call(self.jobs.client(job_id).snapshot)
        self.finish(snap.to_json())


class DetailHandler(TonyAPIHandler):
    """The job page's data: snapshot, spec, attempts, metric series (detail.py)."""

    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        detail = await self.call(job_detail, self.jobs.client(job_id))
        self.finish(detail.to_json())


class EventsHandler(TonyAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        c = self.jobs.client(job_id)
        since = self.int_argument("since", 0)
        timeout = min(
            float(self.int_argument("timeout", 0)), self.tony_config.max_events_wait_seconds
        )
        events, nxt = await self.call(c.events, since, timeout)
        self.finish(EventsAnswer(tuple(events), nxt).to_json())


class LogsHandler(TonyAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        c = self.jobs.client(job_id)
        task = self.get_argument("task", "")
        snap = await self.call(c.snapshot)
        tasks = [t.id for t in snap.tasks]
        if task not in tasks:  # never a path: only the job's own task ids
            known = ", ".join(map(str, tasks)) or "(none)"
            status, what = (400, "name a task") if not task else (404, f"no task {task!r}")
            raise web.HTTPError(status, f"{what}: ?task= one of {known}")
        offset, attempt = self.int_argument("offset", 0), self.int_argument("attempt", 0)
        text, nxt = await self.call(c.logs, task, offset, attempt)
        self.finish({"task": task, "offset": nxt, "text": text})


class StacksHandler(TonyAPIHandler):
    """Every running task's stacks, grouped (the job page's Stacks button): what ``tony-jupyter
    stacks`` shows, as stackgroups.grouped's record. The job's AM is asked with the job's own
    token (the server's user owns the job); an ended job has no stacks to take (409)."""

    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        got = await self.call(job_stacks, self.jobs.client(job_id))
        if isinstance(got, str):
            raise web.HTTPError(409, got)
        self.finish(got.to_json())


class KillHandler(TonyAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str) -> None:
        c = self.jobs.client(job_id)
        killed = await self.call(c.kill, "killed from Jupyter")
        snap = await self.call(c.snapshot)
        self.finish({"killed": bool(killed), "state": str(snap.state)})


def api_handlers() -> list[tuple]:
    job = f"tony/api/jobs/(?P<job_id>{JOB_ID})"
    return [
        ("tony/api/jobs/?", JobsHandler),
        ("tony/api/cells/?", CellsHandler),
        (f"{job}/?", JobHandler),
        (f"{job}/detail", DetailHandler),
        (f"{job}/events", EventsHandler),
        (f"{job}/logs", LogsHandler),
        (f"{job}/stacks", StacksHandler),
        (f"{job}/kill", KillHandler),
    ]
