"""The server side's view of jobs: exact ids only, blocking calls off the event loop."""

from __future__ import annotations

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor

from tornado import web

from ..errors import TonyError
from ..launcher.client import JobClient, JobRecord, jobs_dir, list_jobs
from ..launcher.clients import open_client
from ..protocol import JobSnapshot, JobSummary

# Local ids (tony_20250101_120000_abcdef) and YARN application ids: no dots, no slashes.
JOB_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
_JOB_ID_RE = re.compile(f"^{JOB_ID}$")
_pool = ThreadPoolExecutor(8, thread_name_prefix="tony-server")


async def blocking(fn, *args):
    """JobClient talks HTTP with requests (AMs, YARN's RM): never on the server's loop."""
    return await asyncio.get_running_loop().run_in_executor(_pool, fn, *args)


def record(job_id: str) -> JobRecord:
    """The job with exactly this id (no prefix matching, no paths), or 404."""
    if not _JOB_ID_RE.match(job_id):
        raise web.HTTPError(404, f"no job {job_id!r}")
    d = jobs_dir() / job_id
    if not (d / "spec.json").is_file():
        raise web.HTTPError(404, f"no job {job_id!r}")
    return JobRecord(job_id, d)


def client(job_id: str) -> JobClient:
    return open_client(record(job_id))


def summary(snap: JobSnapshot) -> dict:
    """One row of the jobs list: what the side panel shows."""
    return JobSummary.of(snap).to_json()


def _summary_of(rec: JobRecord) -> dict:
    try:
        return summary(open_client(rec).snapshot())
    except (TonyError, OSError, ValueError) as e:
        return JobSummary(job_id=rec.id, reason=str(e)).to_json()  # state UNKNOWN


async def all_summaries() -> list[dict]:
    recs = await blocking(list_jobs)
    rows = await asyncio.gather(*(blocking(_summary_of, r) for r in recs))
    return sorted(rows, key=lambda r: r.get("started") or 0, reverse=True)


class EndpointCache:
    """job -> registered endpoints, for a moment: TensorBoard's page loads dozens of files."""

    def __init__(self, ttl: float = 2.0):
        self.ttl = ttl
        self._got: dict[str, tuple[float, dict[str, str]]] = {}

    async def endpoint(self, job_id: str, name: str) -> str | None:
        hit = self._got.get(job_id)
        if hit is None or time.monotonic() - hit[0] > self.ttl or name not in hit[1]:
            snap = await blocking(client(job_id).snapshot)
            # An ended job's ports are free for anyone to listen on: forget its endpoints.
            endpoints = {} if snap.terminal else dict(snap.endpoints)
            hit = self._got[job_id] = (time.monotonic(), endpoints)
        return hit[1].get(name)
