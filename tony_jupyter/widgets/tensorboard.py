"""The job widget's TensorBoard tab: an iframe on the Jupyter server's proxy.

The browser often cannot reach the chief's host (a YARN node); the server extension's
``/tony/proxy/<job>/tensorboard/`` can, and it checks Jupyter's auth. The iframe's src is an
absolute path on the page's own origin, under the server's base_url, which the kernel learns
from the server (:mod:`tony_jupyter.core.proxyurls`). The iframe is sandboxed without
``allow-same-origin``: what it shows is a job's, and runs in an origin of its own
(:mod:`tony_jupyter.core.proxyurls`' policy, which the proxy's answers carry too).
"""

from __future__ import annotations

import html

from ..core.proxyurls import IFRAME_SANDBOX, proxy_url

TAB_TITLE = "TensorBoard"
HEIGHT_PX = 600


def iframe_html(job_id: str, endpoint: str = "tensorboard") -> str:
    src = html.escape(proxy_url(job_id, endpoint))
    return (
        f'<div style="font-size:90%;margin-bottom:4px"><a href="{src}" target="_blank">'
        f"open {html.escape(endpoint)} in a new tab</a></div>"
        f'<iframe class="tony-tensorboard" src="{src}" title="{html.escape(endpoint)}" '
        f'sandbox="{IFRAME_SANDBOX}" '
        f'style="width:100%;height:{HEIGHT_PX}px;border:1px solid #8884" loading="lazy"></iframe>'
    )
