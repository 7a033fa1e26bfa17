"""A warm AM on YARN: an application the kernel starts ahead of its next job
(launcher/yarn/warmkeeper.py), so that the job skips YARN's slowest steps (the AM container's
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
import os
import socket
from pathlib import Path
from typing import Any

from tornado import httpserver, routing, web

from ...core import loadenv
from ...core import warmproc as warm
from ...core.jobdir import JobDir
from ...core.protocol import ExecutorEnv
from ...core.spec import JobSpec
from ..main import AM, BACKLOG, executor_env
from .provider import YarnProvider
from .warmpool import WarmPool
from .warmroutes import POLL_S, WAIT_S, router


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
    pool = provider.spares = WarmPool(provider, verifier)
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
    from .. import api, beats, feed, main  # noqa: F401

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


async def _close_task_route(pool: WarmPool) -> None:
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
