"""A spare AM: ``python -m tony_jupyter.am --spare N``, started by the kernel before its next
job (launcher/spare.py; tony_jupyter/warm.py). It starts ``N`` spare executors, imports what an
AM imports, and waits for its job; handed one, it runs it as ``python -m tony_jupyter.am JOB_DIR``
would, its tasks in the spare executors where they fit."""

from __future__ import annotations

import os
import sys

from .. import warm

MAX_SPARE_EXECUTORS = 8


def serve(executors: int) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # as every task's (main.executor_env)
    argv = [sys.executable, "-m", "tony_jupyter.executor", "--spare"]
    spares = [warm.Spare.start(argv, env) for _ in range(min(executors, MAX_SPARE_EXECUTORS))]
    import asyncio  # noqa: F401 - what the AM's start would import, imported while idle

    from tornado import httpserver, ioloop  # noqa: F401

    from . import api, beats, cells, main  # noqa: F401

    job = warm.wait_for_job()
    if job is None:
        return 0  # the kernel is gone; the spare executors read EOF as we exit
    warm.become(job)
    return main.main(job["args"], spares=spares)
