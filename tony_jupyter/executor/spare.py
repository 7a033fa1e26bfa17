"""A spare executor: started by a spare AM before its job came (tony_jupyter/warm.py), with
every module a task needs imported; handed its task's environment, cwd and log file, it runs
the task as ``python -m tony_jupyter.executor`` would."""

from __future__ import annotations

from .. import warm


def serve() -> int:
    import encodings.idna  # noqa: F401 - what a task imports before its user code: here,
    import secrets  # noqa: F401 - while idle, not once the task came

    from . import main, tensorboard  # noqa: F401

    job = warm.wait_for_job()
    if job is None:
        return 0  # the AM is gone
    warm.become(job)
    return main.main()
