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

Its secrets: the kernel's token it knows by its SHA-256 only (``token.sha256``: other
containers of the NodeManager's user can read this container's files). Each spare container
starts with its own one-time secret (in its ``launch_container.sh``, readable by those
containers too), which it trades at once (``POST spare/hello``) for the secret it polls with; a
launch secret presented twice marks its container taken over: it is handed no task and
released. A task is handed once, to its container only. The spare routes close once the job
is handed (``job``, ``hello``, ``status``) and once every handed task was fetched (``task``).
Every route checks its secret before it reads a body, and bounds the body.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hmac
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from tornado import httpserver, routing, web

from ... import jobdir, loadenv, safefiles, warm
from ...jobdir import JobDir
from ...protocol import ExecutorEnv
from ...spec import JobSpec, TaskSpec
from ..main import AM, BACKLOG, executor_env
from .provider import Launch, YarnProvider
from .spare_routes import POLL_S, WAIT_S, router

log = logging.getLogger("tony_jupyter.am.yarn")

# What a fresh executor container localizes; src.tar.gz is the shipped directory, an ARCHIVE
# "src" in a fresh container, unpacked by the spare executor itself.
EXECUTOR_FILES = (jobdir.CELL, jobdir.NAMES, jobdir.BUNDLE, jobdir.SPEC, jobdir.SRC_ARCHIVE)


def shape(task: TaskSpec) -> tuple:
    return (task.memory_mb, task.vcores, task.gpus, task.node_label)


class SparePool:
    """The warm AM's spare containers: asked for, handed to tasks, released."""

    def __init__(self, provider: YarnProvider, verifier: str):
        self.provider = provider
        self.verifier = verifier  # the kernel's token's SHA-256
        self._launch_secrets: dict[str, str] = {}  # container id -> its one-time launch secret
        self._hello_done: set[str] = set()  # containers whose launch secret was spent
        self._sessions: dict[str, str] = {}  # container id -> the secret it polls with
        self.taken_over: set[str] = set()  # a launch secret presented twice: no task for it
        self.closed = False  # job, hello, status: once the job was handed
        self.task_closed = False  # task: once every handed task was fetched
        self.assigned: dict[str, dict] = {}  # container id -> what its executor is handed
        self.fetched: set[str] = set()  # containers whose executor took what it was handed
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

    def spare_env(self, launch: Launch, cid: str) -> dict[str, str]:
        """Spare container ``cid``'s environment: its own one-time secret for this AM, and its
        GPUs' devices set before its executor imports the framework, as a task's in it will be
        (the same container, the same GPUs)."""
        if launch.gpus:
            launch.env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, launch.gpus))
        return {**launch.env, **self.launch_env(cid)}

    def _imports_alike(self, spare: Launch, env: dict[str, str]) -> bool:
        """Whether a task with ``env`` would have imported its framework as the spare did."""
        if not self.framework:
            return True
        task = dict(env)
        if spare.gpus:
            task["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spare.gpus))
        alike = loadenv.imports_as(self.framework, spare.env, task)
        return alike and loadenv.imports_alike(self.writes, spare.env)

    def launch_env(self, cid: str) -> dict[str, str]:
        """What spare container ``cid`` starts with besides the template's: its own secret."""
        secret = secrets.token_urlsafe(32)
        with self.provider.lock:
            self._launch_secrets[cid] = secret
        return {warm.SPARE_TOKEN: secret}

    def hello(self, cid: str, given: str) -> str | None:
        """Trade ``cid``'s launch secret for the secret it polls with; None: not its secret.
        A second trade marks the container taken over (another container read the secret)."""
        expected = self._launch_secrets.get(cid)
        if expected is None or not hmac.compare_digest(given.encode(), expected.encode()):
            return None
        if cid in self._hello_done:
            log.warning("spare container %s: its launch secret came twice; not used", cid)
            self.taken_over.add(cid)
            self._sessions.pop(cid, None)
            return None
        self._hello_done.add(cid)
        self._sessions[cid] = secrets.token_urlsafe(32)
        return self._sessions[cid]

    def polls_as(self, cid: str, given: str) -> bool:
        expected = self._sessions.get(cid)
        return expected is not None and hmac.compare_digest(given.encode(), expected.encode())

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
                    and cid not in self.taken_over
                    and cid in self._sessions  # its executor is there, and said hello
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
        cell = base64.b64decode(files.get(jobdir.CELL, "")).decode(errors="replace")
        self.writes = loadenv.load_env_writes(cell)
        spec = JobSpec.from_json(JobDir(job_dir).spec.read_text())
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
                archive = name == jobdir.SRC_ARCHIVE
                p.resources[jobdir.SRC if archive else name] = {
                    "resource": str(fs.makeQualified(dst).toUri().toString()),
                    "type": "ARCHIVE" if archive else "FILE",
                    "visibility": "APPLICATION",
                    "size": int(st.getLen()),
                    "timestamp": int(st.getModificationTime()),
                }
        except Exception as e:  # noqa: BLE001 - a fresh container then fails, and says why
            log.warning("staging the job's files: %s", e)


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
    verifier = JobDir(job_dir).token_verifier.read_text().strip()
    template = JobSpec.read(job_dir)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((listen_host(args.host, args.advertise), 0))
    sock.listen(BACKLOG)
    sock.setblocking(False)
    url = f"http://{args.advertise or args.host}:{sock.getsockname()[1]}"
    provider = YarnProvider(job_dir)
    pool = provider.spares = SparePool(provider, verifier)
    provider.start(url)
    env = {warm.SPARE_URL: url, "PYTHONUNBUFFERED": "1"}  # each its own secret: launch_env
    for name in ("HADOOP_USER_NAME", ExecutorEnv.var("webhdfs_url")):
        if os.environ.get(name):
            env[name] = os.environ[name]
    # What a framework reads as it loads, as the template's tasks will have it (its spare
    # executors import the framework under it).
    env.update(loadenv.at_import(executor_env("", template, "", job_dir)))
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
    server = httpserver.HTTPServer(router(pool, switch))
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
    loop.create_task(_close_task_route(pool))
    return await am.run()


async def _close_task_route(pool: SparePool) -> None:
    """``spare/task`` goes once each handed task was fetched (or a poll's time has passed:
    a spare that died before it fetched its task fails as the task)."""
    deadline = asyncio.get_running_loop().time() + WAIT_S * 2
    while pool.assigned and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(POLL_S * 5)
    pool.task_closed = True


def listen_host(host: str, advertise: str | None) -> str:
    """Where the warm AM listens: the address its executors reach it at (the container's
    host, ``--advertise``), not every interface."""
    if host not in ("0.0.0.0", "") or not advertise:  # noqa: S104 - the case replaced here
        return host
    try:
        return socket.gethostbyname(advertise)
    except OSError:
        return host
