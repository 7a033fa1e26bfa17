"""Where a kernel finds the server extension's proxy, as a URL path the browser can use."""

from __future__ import annotations

import os
from urllib.parse import quote

BASE_URL_ENV = "TONY_JUPYTER_BASE_URL"


def base_url() -> str:
    """The Jupyter server's base_url as seen by the browser, always ending in '/'.

    Set by the server extension in the server's environment, which the kernels it starts
    inherit; JupyterHub's single-user servers also say it in JUPYTERHUB_SERVICE_PREFIX.
    """
    base = os.environ.get(BASE_URL_ENV) or os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    return base


def proxy_url(job_id: str, endpoint: str) -> str:
    """An absolute path (no host: the page's own) to a job's endpoint through the proxy."""
    return f"{base_url()}tony/proxy/{quote(job_id, safe='')}/{quote(endpoint, safe='')}/"
