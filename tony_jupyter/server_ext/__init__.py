"""The Jupyter server extension: ``/tony/api/...`` (the user's jobs) and ``/tony/proxy/...``
(an authenticated reverse proxy to the endpoints a job registered, e.g. its TensorBoard).

Kernels learn where the proxy is from the server itself: at load time the extension puts the
server's ``base_url`` into ``TONY_JUPYTER_BASE_URL`` in the server's environment, which every
kernel this server starts inherits (see :mod:`tony_jupyter.server_ext.urls`).
"""

from __future__ import annotations

import os

from .urls import BASE_URL_ENV


def _load_jupyter_server_extension(serverapp) -> None:
    # Imported here: kernels import this package (for urls) and need none of the server side.
    from jupyter_server.utils import url_path_join

    from .api import api_handlers
    from .proxy import proxy_handlers

    base = serverapp.web_app.settings["base_url"]
    routes = [(url_path_join(base, p), *rest) for p, *rest in api_handlers() + proxy_handlers()]
    serverapp.web_app.add_handlers(".*$", routes)
    os.environ[BASE_URL_ENV] = base
    serverapp.log.info("tony-jupyter: %stony/api and %stony/proxy", base, base)
