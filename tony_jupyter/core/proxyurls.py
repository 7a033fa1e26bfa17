"""The server extension's proxy as the kernel side and the server both see it: its URL paths,
and the sandbox what it serves runs in.

The widgets (kernel side) build links and iframes with these; the server extension
(server_ext/) serves them. Neither imports the other: what they agree on is here.
"""

from __future__ import annotations

import os
from urllib.parse import quote

BASE_URL_ENV = "TONY_JUPYTER_BASE_URL"
# Every proxied answer's Content-Security-Policy (server_ext/sandbox.py says why): scripts, forms,
# popups and downloads work (TensorBoard needs them); the origin stays opaque.
POLICY = "sandbox allow-scripts allow-forms allow-popups allow-downloads"
# The iframes' sandbox attribute: the same set (labextension's tensorboard.ts says it too).
IFRAME_SANDBOX = POLICY.removeprefix("sandbox ")


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
