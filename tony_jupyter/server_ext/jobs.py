"""The server side's view of jobs: exact ids only, blocking calls off the event loop."""

from __future__ import annotations

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from tornado import web

from ..core.errors import TonyError
from ..core.jobdir import YARN_INFO
from ..core.protocol import JOB_ID, EndpointAnswer, JobSnapshot, JobSummary
from ..core.waits import snapshot_wait
from ..launcher.client import JobClient, JobRecord, is_job_dir, jobs_dir, list_jobs
from ..launcher.joblist import all_jobs, cluster_configured
from ..launcher.pickclient import open_client
from .boards import FinishedBoards, has_event_files

_JOB_ID_RE = re.compile(f"^{JOB_ID}$")


def record(job_id: str, root: Path | None = None, user: str | None = None) -> JobRecord:
    """The job with exactly this id (no prefix matching, no paths), or 404; with ``user``,
    404 too for a job someone else submitted (a secure cluster's Kerberos user)."""
    if not _JOB_ID_RE.match(job_id):
        raise web.HTTPError(404, f"no job {job_id!r}")
    d = jobs_dir(root) / job_id
    if not is_job_dir(d) and cluster_configured():
        try:  # a job of this user's submitted elsewhere: its record made here (history.py)
            adopt(job_id, root)
        except TonyError:
            pass
    if not is_job_dir(d) or not _owned(JobRecord(job_id, d), user):
        raise web.HTTPError(404, f"no job {job_id!r}")
    return JobRecord(job_id, d)


def _owned(rec: JobRecord, user: str | None) -> bool:
    """Whether the server's user may see this job: on a secure cluster only its submitter."""
    if user is None:
        return True
    info = rec.yarn()
    if info is None:  # a local job's, or a damaged yarn.json: its submitter unknown
        return YARN_INFO not in rec.damaged
    return not info.secure or info.user == user


def kerberos_user() -> str | None:
    """The Hadoop user of this server's Kerberos credentials when HADOOP_CONF_DIR names a
    secure cluster; None on a plain one or with no cluster configured."""
    from ..core.hadoopconf import HadoopConf
    from ..core.kerberos import Login

    try:
        if not HadoopConf.load().secure:
            return None
        return Login.from_env().user()
    except TonyError:
        return None


def summary(snap: JobSnapshot) -> dict:
    """One row of the jobs list: what the side panel shows."""
    return replace(JobSummary.of(snap), waiting=snapshot_wait(snap)).to_json()


def adopt(job_id: str, root: Path | None) -> None:
    from ..launcher.yarn.hdfsjobs import adopt as adopt_yarn

    adopt_yarn(job_id, root)


class ServerJobs:
    """What the handlers share, made once from the extension's settings (config.py): a thread
    pool for JobClient's blocking HTTP (AMs, YARN's RM), never run on the server's loop, and
    the endpoints each job registered (URL and key, from its AM), kept for a moment
    (TensorBoard's page loads dozens of files)."""

    def __init__(
        self,
        jobs_home: str = "",
        threads: int = 8,
        endpoint_ttl: float = 2.0,
        user: str | None = None,
        boards: FinishedBoards | None = None,
    ):
        self.root = Path(jobs_home) if jobs_home else None  # None: where the kernels look
        self.user = user  # a secure cluster's user: the only one whose jobs are shown
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="tony-server")
        self.endpoint_ttl = endpoint_ttl
        self._endpoints: dict[tuple[str, str], tuple[float, EndpointAnswer]] = {}
        self.boards = boards or FinishedBoards()  # TensorBoard for ended jobs, on demand

    async def blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def owns(self, rec: JobRecord) -> bool:
        """Whether the server's user may see this job (on a secure cluster: its submitter)."""
        return _owned(rec, self.user)

    def client(self, job_id: str) -> JobClient:
        return open_client(record(job_id, self.root, self.user))

    async def summaries(self) -> list[dict]:
        """This host's records, the HDFS history's and the RM's jobs (launcher/joblist.py);
        on a secure cluster only the server's user's (the cluster lists only theirs)."""
        listing = await self.blocking(all_jobs, self.root)
        theirs = {
            r.id for r in await self.blocking(list_jobs, self.root) if not _owned(r, self.user)
        }
        return [r for r in listing.rows if r["job_id"] not in theirs]

    def _finished_board(self, client: JobClient) -> EndpointAnswer | None:
        """An ended job's TensorBoard from the event files in its history (boards.py)."""
        if not client.snapshot().terminal:
            return None  # a running job's TensorBoard is its chief's, registered with its AM
        rec = client.record
        if rec.yarn() and not has_event_files(rec.layout.tensorboard):
            from ..launcher.yarn.hdfsjobs import fetch_tensorboard

            try:
                fetch_tensorboard(rec)  # from the job's history entry on HDFS
            except (TonyError, OSError):
                return None
        board = self.boards.endpoint(rec)
        return None if board is None else EndpointAnswer("tensorboard", board["url"], board["key"])

    async def endpoint(self, job_id: str, name: str) -> EndpointAnswer | None:
        """Where the job's endpoint is and its guard's key (JobClient.endpoint), or None: also
        once the job has ended, as its ports are free for anyone to listen on (an ended job's
        TensorBoard is started from its history, boards.py)."""
        hit = self._endpoints.get((job_id, name))
        if hit is None or time.monotonic() - hit[0] > self.endpoint_ttl:
            client = self.client(job_id)  # 404 for an unknown job
            got = await self.blocking(client.endpoint, name)
            if got is None and name == "tensorboard":
                got = await self.blocking(self._finished_board, client)
            if got is None:
                self._endpoints.pop((job_id, name), None)
                return None
            hit = self._endpoints[(job_id, name)] = (time.monotonic(), got)
        return hit[1]
