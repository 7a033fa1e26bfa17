"""The Jupyter server extension: ``/tony/api/...`` (the user's jobs) and ``/tony/proxy/...``
(an authenticated reverse proxy to the endpoints a job registered, e.g. its TensorBoard).

Kernels learn where the proxy is from the server itself: at load time the extension puts the
server's ``base_url`` into ``TONY_JUPYTER_BASE_URL`` in the server's environment, which every
kernel this server starts inherits (see :mod:`tony_jupyter.core.proxyurls`).
"""

from __future__ import annotations

import atexit
import os

from ..core.proxyurls import BASE_URL_ENV


def _load_jupyter_server_extension(serverapp) -> None:
    # Imported here: importing the package (the server finds the extension by it) loads none
    # of the server side.
    from jupyter_server.utils import url_path_join
    from tornado.ioloop import PeriodicCallback

    from ..core.retention import DAYS_ENV
    from ..launcher.client import HOME_ENV
    from .api import SETTINGS_KEY, api_handlers
    from .boards import FinishedBoards
    from .config import TonyJupyter
    from .jobs import ServerJobs, kerberos_user
    from .proxy import proxy_handlers

    config = TonyJupyter(parent=serverapp)
    serverapp.web_app.settings[SETTINGS_KEY] = config
    boards = FinishedBoards(config.tensorboard_idle_seconds)
    jobs = ServerJobs(
        config.jobs_home, config.threads, config.endpoint_cache_seconds, kerberos_user(), boards
    )
    serverapp.web_app.settings[SETTINGS_KEY + ".jobs"] = jobs

    def reap() -> None:  # finished jobs' TensorBoards: stopped when idle (off the loop)
        jobs.pool.submit(boards.reap)

    PeriodicCallback(reap, 1000 * min(60.0, config.tensorboard_idle_seconds)).start()
    atexit.register(boards.close)  # and with the server
    # The kernels this server starts inherit its environment: they find the same job records
    # and the proxy's base URL there (see urls.py).
    if config.jobs_home:
        os.environ[HOME_ENV] = config.jobs_home
    if config.history_days > 0:
        os.environ[DAYS_ENV] = f"{config.history_days:g}"
    os.environ[BASE_URL_ENV] = base = serverapp.web_app.settings["base_url"]
    handlers = api_handlers() + (proxy_handlers() if config.proxy_enabled else [])
    routes = [(url_path_join(base, p), *rest) for p, *rest in handlers]
    serverapp.web_app.add_handlers(".*$", routes)
    serverapp.log.info(
        "tony-jupyter: %stony/api%s; jobs in %s",
        base,
        f" and {base}tony/proxy" if config.proxy_enabled else " (proxy off)",
        config.jobs_home or "$TONY_JUPYTER_HOME or ~/.tony-jupyter",
    )
