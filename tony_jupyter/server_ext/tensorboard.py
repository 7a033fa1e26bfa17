"""TensorBoard through the proxy: turn its auto-reload on, so scalars show up while training runs.

TensorBoard 2.x's page loads its data once and reloads only if the user ticks "Reload data"
(off by default), so a job's TensorBoard opened before the first scalars were written would
stay at "No dashboards are active". Its settings live in ``localStorage["_tb_global_settings"]``;
a tiny script at the top of TensorBoard's index page sets ``autoReload`` unless the user has
chosen already. Through the proxy the page's origin is opaque (sandbox.py), where localStorage
throws: the script puts one in memory in its place. TensorBoard's CSP forbids
inline scripts, so the script's hash is added to its ``script-src``.
"""

from __future__ import annotations

import base64
import hashlib

SCRIPT = (
    # In the proxy's sandbox (sandbox.py) the page's origin is opaque and localStorage throws:
    # TensorBoard gets one in memory, for the page's life, instead.
    "(function(){var s;try{s=window.localStorage;s.getItem('_tb')}catch(e){var m={};"
    "s={getItem:function(k){return Object.prototype.hasOwnProperty.call(m,k)?m[k]:null},"
    "setItem:function(k,v){m[k]=String(v)},removeItem:function(k){delete m[k]},"
    "clear:function(){m={}},key:function(i){return Object.keys(m)[i]||null},"
    "get length(){return Object.keys(m).length}};"
    "try{Object.defineProperty(window,'localStorage',{value:s,configurable:true})}catch(e2){}}"
    "try{var k='_tb_global_settings',g=JSON.parse(s.getItem(k)||'{}');"
    "if(g.autoReload===undefined){g.autoReload=true;s.setItem(k,JSON.stringify(g))}"
    "}catch(e){}})()"
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
