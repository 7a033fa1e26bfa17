"""A warm AM on YARN: an application the kernel starts ahead of its next job
(launcher/yarn/warm.py), so that the job skips YARN's slowest steps (the AM container's
allocation and localization, the JVM's and Python's start, the executors' containers and
interpreters).

``python -m tony_jupyter.am --spare-yarn JOB_DIR --host H --advertise A`` runs in its AM
container with a *template* spec (the last job's) in its staging: it starts its JVM, registers
with the RM, asks for one container per task of the template and starts a spare executor in
each (``python -m tony_jupyter.executor --spare-yarn``: imported, long-polling this AM for its
task). The kernel hands it a job (``POST /api/v1/spare/job`` with the job's files); it becomes
that job's AM (main.AM) on the same socket and application, each task goes to a waiting
container of its shape (memory, vcores, GPUs, node label) whose start environment a fresh one
would share, the others are asked of YARN as usual, and the spares left over are released.
Not handed a job within its idle time, it unregisters and exits, leaving no staging behind.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

from tornado import httpserver, routing, web

from ... import loadenv, safefiles, warm
from ...errors import UnsafeFileError
from ...protocol import task_token
from ...spec import JobSpec, TaskSpec
from ..main import AM, BACKLOG, executor_env
from .provider import Launch, YarnProvider

log = logging.getLogger("tony_jupyter.am.yarn")

POLL_S, WAIT_S = 0.02, 25.0
# What a fresh executor container localizes; src.tar.gz is the shipped directory, an ARCHIVE
# "src" in a fresh container, unpacked by the spare executor itself.
EXECUTOR_FILES = ("cell.py", "names.pkl", "bundle.json", "spec.json", "src.tar.gz")


def shape(task: TaskSpec) -> tuple:
    return (task.memory_mb, task.vcores, task.gpus, task.node_label)


class SparePool:
    """The warm AM's spare containers: asked for, handed to tasks, released."""

    def __init__(self, provider: YarnProvider, token: str):
        self.provider = provider
        self.token = token
        self.assigned: dict[str, dict] = {}  # container id -> what its executor is handed
        self.released: set[str] = set()
        self.waiting: set[str] = set()  # containers whose executor waits here now
        self.files: dict[str, str] = {}  # the job's files for its executors, base64
        self.job: asyncio.Future | None = None
        self.job_dir: Path | None = None
        self.staged = False
        self.count = 0
        # What the spare executors import while they wait ("": none; am/spare.py's plan), and
        # the job's cell's writes to what that import reads (loadenv.load_env_writes).
        self.framework = ""
        self.writes: list | None = []

    def ask(self, template: JobSpec, env: dict[str, str]) -> None:
        preloadable = template.procs_per_task == 1 and not template.elastic
        self.framework = template.framework if preloadable else ""
        for t in template.tasks:
            for _ in range(t.instances):
                self.count += 1
                launch = Launch(t, f"spare:{self.count}", 0, dict(env), spare=True)
                self.provider.request(launch)

    def spare_env(self, launch: Launch) -> dict[str, str]:
        """A spare container's environment: its GPUs' devices are set before its executor
        imports the framework, as a task's in it will be (the same container, the same GPUs)."""
        if launch.gpus:
            launch.env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, launch.gpus))
        return launch.env

    def _imports_alike(self, spare: Launch, env: dict[str, str]) -> bool:
        """Whether a task with ``env`` would have imported its framework as the spare did."""
        if not self.framework:
            return True
        task = dict(env)
        if spare.gpus:
            task["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spare.gpus))
        alike = loadenv.imports_as(self.framework, spare.env, task)
        return alike and loadenv.imports_alike(self.writes, spare.env)

    def take(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> bool:
        """Hand the task to a spare container that fits; False: ask YARN as usual."""
        p = self.provider
        if not self.files:
            return False
        with p.lock:
            found = next(
                (
                    (cid, s)
                    for cid, s in p.running.items()
                    if s.spare
                    and cid not in self.assigned
                    and shape(s.task) == shape(task)
                    and warm.at_start(s.env) == warm.at_start(env)
                    and self._imports_alike(s, env)
                ),
                None,
            )
            if found is None:
                self._stage()  # a fresh container localizes the job's files
                return False
            cid, spare = found
            launch = Launch(task, task_id, attempt, env, container=spare.container)
            launch.gpus = spare.gpus
            p.running[cid] = launch
            p.by_task[(task_id, attempt)] = launch
            self.assigned[cid] = {"env": p.task_env(launch, spare.container), "files": self.files}
        log.info("%s handed to spare container %s", task_id, cid)
        return True

    def lost(self, cid: str) -> None:
        log.info("spare container %s ended before it was handed a task", cid)

    def release_rest(self) -> None:
        """After the job's tasks were handed: the spares not needed go back to YARN."""
        p = self.provider
        with p.lock:
            rest = [(cid, x) for cid, x in p.running.items() if x.spare]
            asked = [x for x in p.pending.values() if x.spare]
            for x in asked:
                p._forget_request(x)
        for cid, x in rest:
            self.released.add(cid)
            p.pool.submit(p._stop_container, x.container)

    def adopt(self, job_dir: Path, files: dict[str, str]) -> None:
        """Write the job's files over the template's (localized files are symlinks into
        NodeManager's cache: replaced, not written through)."""
        for name in files:  # every name checked before any is written (safefiles.py)
            safefiles.inside(job_dir, name)
        for name, b64 in files.items():
            safefiles.write_file(job_dir, name, base64.b64decode(b64))
        self.files = {n: files[n] for n in EXECUTOR_FILES if n in files}
        cell = base64.b64decode(files.get("cell.py", "")).decode(errors="replace")
        self.writes = loadenv.load_env_writes(cell)
        spec = JobSpec.from_json((job_dir / "spec.json").read_text())
        self.provider.keep_staging = spec.keep_staging
        self.provider.shards = None
        self.job_dir = job_dir

    def _stage(self) -> None:
        """The job's files on HDFS, for a task no spare takes (a fresh container localizes them),
        once, when first needed: not before (JPype's HDFS calls hold the GIL, and the event
        loop that answers the spare executors would wait on them: ~0.8 s measured)."""
        p, J, job_dir = self.provider, self.provider.J, self.job_dir
        if self.staged or job_dir is None:
            return
        self.staged = True
        try:
            fs = J.Path(p.staging).getFileSystem(p.conf)
            for name in self.files:
                dst = J.Path(f"{p.staging}/{name}")
                fs.copyFromLocalFile(False, True, J.Path(str(job_dir / name)), dst)
                st = fs.getFileStatus(dst)
                archive = name == "src.tar.gz"
                p.resources["src" if archive else name] = {
                    "resource": str(fs.makeQualified(dst).toUri().toString()),
                    "type": "ARCHIVE" if archive else "FILE",
                    "visibility": "APPLICATION",
                    "size": int(st.getLen()),
                    "timestamp": int(st.getModificationTime()),
                }
        except Exception as e:  # noqa: BLE001 - a fresh container then fails, and says why
            log.warning("staging the job's files: %s", e)


class _Handler(web.RequestHandler):
    def initialize(self, pool: SparePool) -> None:
        self.pool = pool

    def check(self, token: str) -> None:
        if self.request.headers.get("Authorization", "") != f"Bearer {token}":
            raise web.HTTPError(403)


class JobHandler(_Handler):
    """The kernel hands the job: its files (base64), once."""

    def post(self) -> None:
        self.check(self.pool.token)
        job = self.pool.job
        if job is None or job.done():
            raise web.HTTPError(409, "this warm AM has its job already")
        files = json.loads(self.request.body)["files"]
        try:
            for name in files:  # before the job is taken: a refused one leaves this AM waiting
                safefiles.inside(self.pool.provider.job_dir, name)
        except UnsafeFileError as e:
            self.set_status(400)
            self.finish({"error": str(e)})
            return
        job.set_result(files)
        self.finish({"ok": True})


class TaskHandler(_Handler):
    """A spare executor waits here for its task (a long poll: 204 when none came yet)."""

    async def get(self) -> None:
        self.check(task_token(self.pool.token, "spare"))
        cid = self.get_query_argument("container")
        deadline = asyncio.get_running_loop().time() + WAIT_S
        self.pool.waiting.add(cid)
        try:
            while asyncio.get_running_loop().time() < deadline:
                if cid in self.pool.assigned:
                    self.finish(self.pool.assigned[cid])
                    return
                if cid in self.pool.released:
                    raise web.HTTPError(410)
                await asyncio.sleep(POLL_S)
        finally:
            self.pool.waiting.discard(cid)
        self.set_status(204)
        self.finish()


class StatusHandler(_Handler):
    """How many spare executors wait now (ready to be handed a task), and whether a job came."""

    def get(self) -> None:
        self.check(self.pool.token)
        job = self.pool.job
        self.finish({"waiting": len(self.pool.waiting), "handed": bool(job and job.done())})


class Switch(routing.Router):
    """Every request not for the spare routes goes to ``target``: nothing (404) until the job's
    own API (main.AM) takes over on the same socket."""

    def __init__(self) -> None:
        self.target: Any = web.Application([])

    def find_handler(self, request, **kwargs):
        return self.target.find_handler(request, **kwargs)


def serve(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="tony_jupyter.am --spare-yarn")
    p.add_argument("job_dir", type=Path)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--advertise", default=None)
    p.add_argument("--provider", choices=("yarn",), default="yarn")
    args = p.parse_args(argv)
    job_dir = args.job_dir.resolve()
    token = (job_dir / "token").read_text().strip()
    template = JobSpec.from_json((job_dir / "spec.json").read_text())
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, 0))
    sock.listen(BACKLOG)
    sock.setblocking(False)
    url = f"http://{args.advertise or args.host}:{sock.getsockname()[1]}"
    provider = YarnProvider(job_dir)
    pool = provider.spares = SparePool(provider, token)
    provider.start(url)
    env = {
        warm.SPARE_URL: url,
        warm.SPARE_TOKEN: task_token(token, "spare"),
        "PYTHONUNBUFFERED": "1",
    }
    for name in ("HADOOP_USER_NAME", "TONY_WEBHDFS_URL"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    # What a framework reads as it loads, as the template's tasks will have it (its spare
    # executors import the framework under it).
    env.update(loadenv.at_import(executor_env("", template, "", "", job_dir)))
    pool.ask(template, env)
    # What the AM imports once it has its job, imported while idle: handed a job, the event
    # loop that answers the spare executors would otherwise stall on them (~0.5 s measured).
    from .. import api, beats, cells, feed, main  # noqa: F401

    idle = float(os.environ.get(warm.YARN_IDLE, "") or warm.YARN_IDLE_DEFAULT_S)
    return asyncio.run(_run(job_dir, provider, pool, sock, url, args, idle))


async def _run(job_dir, provider, pool, sock, url, args, idle: float) -> int:
    loop = asyncio.get_running_loop()
    pool.job = loop.create_future()
    switch = Switch()
    spare_api = web.Application(
        [
            ("/api/v1/spare/job", JobHandler, {"pool": pool}),
            ("/api/v1/spare/task", TaskHandler, {"pool": pool}),
            ("/api/v1/spare/status", StatusHandler, {"pool": pool}),
        ]  # fmt: skip
    )
    rules = [
        routing.Rule(routing.PathMatches(r"/api/v1/spare/.*"), spare_api),
        routing.Rule(routing.AnyMatches(), switch),
    ]
    server = httpserver.HTTPServer(routing.RuleRouter(rules))
    server.add_sockets([sock])
    try:
        files = await asyncio.wait_for(pool.job, idle)
    except asyncio.TimeoutError:
        provider.set_outcome("KILLED", f"a warm AM not handed a job within {idle:g} s")
        provider.keep_staging = False
        await loop.run_in_executor(None, provider.shutdown)
        server.stop()
        return 0
    pool.adopt(job_dir, files)
    am = AM(job_dir, provider, args.host, args.advertise, listening=(sock, url, server, switch))
    am.launch()
    pool.release_rest()
    return await am.run()
