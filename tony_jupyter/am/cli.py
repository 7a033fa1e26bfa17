"""The AM's command line, ``python -m tony_jupyter.am JOB_DIR [--provider local|yarn]``
(``__main__.py``; a spare AM's once it has its job, warmstart.py): the Provider it asks for, then
the AM (main.py) launched and run."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from ..core import warmproc as warm
from . import timeline
from .local import LocalProvider
from .main import AM
from .provider import Provider


def _import_serving() -> None:
    """What the AM serves its API with, imported while its JVM starts Hadoop's clients and
    registers (Java calls leave the GIL): the API answers sooner after the registration."""
    import asyncio  # noqa: F401

    from tornado import httpserver, ioloop  # noqa: F401

    from . import api, beats  # noqa: F401


def main(argv: list[str] | None = None, spares: list[warm.WarmProcess] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tony_jupyter.am")
    p.add_argument("job_dir", type=Path)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--advertise", default=None, help="the host executors reach the AM at")
    p.add_argument("--provider", choices=("local", "yarn"), default="local")
    args = p.parse_args(argv)
    job_dir = args.job_dir.resolve()
    timeline.mark("AM modules imported")

    def make_provider() -> Provider:
        if args.provider == "yarn":
            threading.Thread(target=_import_serving, name="imports", daemon=True).start()
            from .yarn.provider import YarnProvider  # starts a JVM: only in a YARN AM

            return YarnProvider(job_dir)
        return LocalProvider(job_dir, spares=spares)

    provider = make_provider()
    am = AM(job_dir, provider, host=args.host, advertise=args.advertise)
    timeline.mark("coordinator built")
    am.launch()
    timeline.mark("tasks asked for")
    if isinstance(provider, LocalProvider):
        provider.drop_spares()  # the tasks have started: the spares left are not needed
    import asyncio  # after the launch: the tasks' interpreters start meanwhile

    # The server is built inside the running loop (run): tornado's conditions bind to it.
    return asyncio.run(am.run())
