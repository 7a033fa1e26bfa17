"""A spare executor: started by a spare AM before its job came (tony_jupyter/warm.py), with
every module a task needs imported; handed its task's environment, cwd and log file, it runs
the task as ``python -m tony_jupyter.executor`` would."""

from __future__ import annotations

from .. import warm


def serve() -> int:
    from . import main  # the imports a fresh executor pays for once its task started

    job = warm.wait_for_job()
    if job is None:
        return 0  # the AM is gone
    warm.become(job)
    return main.main()
