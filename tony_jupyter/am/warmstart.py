"""A spare AM: ``python -m tony_jupyter.am --spare N [SPEC_JSON]``, started by the kernel before its
next job (launcher/localwarm.py; core/warmproc.py). It starts ``N`` spare executors, imports what
an AM imports, and waits for its job; handed one, it runs it as ``python -m tony_jupyter.am
JOB_DIR`` would, its tasks in the spare executors where they fit. Told to import (a line
``warm.IMPORT_NOW``, from the kernel once its last job has ended), it tells its spare executors.

``SPEC_JSON``: the kernel's last job's spec. Its spare executors then import that job's
framework, each under the environment that job's task in its place had (``TF_USE_LEGACY_KERAS``,
the job's ``tony.containers.envs``, its GPUs' ``CUDA_VISIBLE_DEVICES``): a like job finds them
fitting. A job whose tasks start several processes each (``--procs-per-task``) or an elastic
one is not pre-imported for: its executor sets ``OMP_NUM_THREADS`` after the spare's import
would have."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..core import loadenv
from ..core import warmproc as warm
from ..core.jobdir import JobDir
from ..core.spec import JobSpec

MAX_SPARE_EXECUTORS = 8


def plan(executors: int, spec_json: str = "") -> list[tuple[str, dict[str, str]]]:
    """Each spare executor's framework ("": none) and what its environment adds to the AM's."""
    if not spec_json:
        return [("", {})] * executors
    from .local import first_attempt_gpus
    from .main import executor_env

    spec = JobSpec.from_json(spec_json)
    task_env = executor_env("", spec, "", Path("."))
    common = {**warm.at_start(task_env), **loadenv.at_import(task_env)}
    framework = "" if spec.procs_per_task > 1 or spec.elastic else spec.framework
    out = []
    for gpus in first_attempt_gpus(spec)[:executors]:
        extra = dict(common) if gpus is None else dict(common, CUDA_VISIBLE_DEVICES=gpus)
        out.append((framework, extra))
    return out + [("", {})] * (executors - len(out))


def fitting(spares: list[warm.WarmProcess], job_dir: Path) -> list[warm.WarmProcess]:
    """The spares the job may use: none that imported a framework under a variable its cell
    sets, before its own import, to another value (those read EOF and exit)."""
    if not any(s.framework for s in spares):
        return spares
    cell = JobDir(job_dir).cell
    writes = loadenv.load_env_writes(cell.read_text(errors="replace")) if cell.exists() else []
    keep = []
    for s in spares:
        if s.framework and not loadenv.imports_alike(writes, s.env):
            s.close()
        else:
            keep.append(s)
    return keep


def serve(executors: int, spec_json: str = "") -> int:
    warm.end_with_parent()  # the kernel: from a timer thread, maybe (no parent-death signal)
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # as every task's (main.executor_env)
    argv = [sys.executable, "-m", "tony_jupyter.executor", "--spare"]
    planned = plan(min(executors, MAX_SPARE_EXECUTORS), spec_json)
    spares = [
        warm.WarmProcess.start(argv + [fw] if fw else argv, dict(env, **extra), framework=fw)
        for fw, extra in planned
    ]
    import asyncio  # noqa: F401 - what the AM's start would import, imported while idle

    from tornado import httpserver, ioloop  # noqa: F401

    from . import api, beats, cli  # noqa: F401

    def import_now() -> None:  # the kernel's last job has ended: the spare executors may import
        for s in spares:
            if s.framework:
                s.import_now()

    job = warm.wait_for_job(import_now)
    if job is None:
        return 0  # the kernel is gone; the spare executors read EOF as we exit
    warm.become(job)
    return cli.main(job["args"], spares=fitting(spares, Path(job["args"][0])))
