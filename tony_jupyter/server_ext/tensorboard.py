"""TensorBoard through the proxy: turn its auto-reload on, so scalars show up while training runs.

TensorBoard 2.x's page loads its data once and reloads only if the user ticks "Reload data"
(off by default), so a job's TensorBoard opened before the first scalars were written would
stay at "No dashboards are active". Its settings live in ``localStorage["_tb_global_settings"]``
of the page's origin (Jupyter's, through the proxy); a tiny script at the top of TensorBoard's
index page sets ``autoReload`` unless the user has chosen already. TensorBoard's CSP forbids
inline scripts, so the script's hash is added to its ``script-src``.
"""

from __future__ import annotations

import base64
import hashlib

SCRIPT = (
    "try{var k='_tb_global_settings',s=JSON.parse(localStorage.getItem(k)||'{}');"
    "if(s.autoReload===undefined){s.autoReload=true;localStorage.setItem(k,JSON.stringify(s))}"
    "}catch(e){}"
)
_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode() + "'"
_ANCHOR = b'<meta name="tb-relative-root"'


def enable_autoreload(response, path) -> None:
    """A ``rewrite_response`` hook for jupyter-server-proxy: only TensorBoard's index page."""
    if path not in ("/", "/index.html") or response.code != 200 or _ANCHOR not in response.body:
        return
    response.body = response.body.replace(
        _ANCHOR, b"<script>" + SCRIPT.encode() + b"</script>" + _ANCHOR, 1
    )
    csp = response.headers.get("Content-Security-Policy")
    if csp:
        parts = [p.strip() for p in csp.split(";")]
        parts = [p + " " + _HASH if p.startswith("script-src") else p for p in parts]
        response.headers["Content-Security-Policy"] = ";".join(parts)
