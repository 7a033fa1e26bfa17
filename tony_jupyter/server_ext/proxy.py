"""``/tony/proxy/<job>/<endpoint>/<path>``: HTTP and WebSocket to what a job registered.

Built on jupyter-server-proxy's ``ProxyHandler`` (it authenticates in ``prepare()``). The
upstream host and port come only from the job's registered endpoints (``{"tensorboard":
"http://host:port/"}``): the URL names a job and an endpoint, never a host, so this is not an
open proxy. Everything after the endpoint is a path on that one upstream. The upstream gets the
endpoint's key (``Authorization: Bearer``; TensorBoard's guard takes it), which the AM gives
the job's token only, and none of the user's own credentials.

Nothing it serves runs in Jupyter's origin (sandbox.py): every answer is sandboxed by its CSP
and carries no cookie; a browser's navigation goes on to ``/tony/framed/...``, the same proxy
behind a capability instead of Jupyter's cookie, which a sandboxed page cannot send.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qsl, quote, urlencode, urlparse

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server_proxy.handlers import AddSlashHandler, ProxyHandler
from tornado import web

from . import sandbox, tensorboard
from .api import SETTINGS_KEY
from .jobs import JOB_ID, ServerJobs

ENDPOINT = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
# Referer: a framed page's URL holds its capability, which the upstream never gets.
STRIPPED_HEADERS = ("Authorization", "Cookie", "X-XSRFToken", "Referer")
# jupyter-server-proxy tells the upstream its context path in these.
CONTEXT_HEADERS = ("X-Forwarded-Context", "X-ProxyContextPath", "X-Forwarded-Prefix")
FRAMED = re.compile(rf"/tony/framed/({JOB_ID})/({ENDPOINT})/({sandbox.CAPABILITY})(?:/|$)")


def _without_token(query: str) -> str:
    """A query without Jupyter's ``token`` (it never travels on to what a job serves)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, v) for k, v in pairs if k != "token"])


class EndpointProxyHandler(ProxyHandler):
    """Proxies to the endpoint the job registered (its AM says where), and nowhere else."""

    upstream_key: str | None = None  # the endpoint's key: set by upstream(), which runs first
    framed = False  # /tony/framed/...: a capability, not Jupyter's auth (FramedProxyHandler)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # WebSocketHandlerMixin sets flush (and finish) on the instance, past any override.
        plain: Callable = getattr(self, "flush")  # noqa: B009 - the instance's, not the class's

        def flush(include_footers: bool = False):
            self._seal()
            return plain(include_footers)

        setattr(self, "flush", flush)  # noqa: B010 - as the mixin does

    def _seal(self) -> None:
        """Every answer, upstream's or ours: sandboxed (an opaque origin), and no cookie."""
        if self._headers_written:
            return
        self.clear_header("Set-Cookie")
        if hasattr(self, "_new_cookie"):
            del self._new_cookie  # Jupyter's own (its login by ?token=): not here either
        self.add_header("Content-Security-Policy", sandbox.POLICY)
        if self.framed:
            # A sandboxed page's requests come from an opaque origin ("null"), without
            # credentials: the capability in the path is what lets them in.
            self.set_header("Access-Control-Allow-Origin", "*")

    async def upstream(self, job_id: str, endpoint: str) -> tuple[str, int]:
        jobs: ServerJobs = self.settings[SETTINGS_KEY + ".jobs"]
        found = await jobs.endpoint(job_id, endpoint)  # 404 for an unknown job
        if found is None or not isinstance(found.url, str):
            raise web.HTTPError(404, f"job {job_id} has no endpoint {endpoint!r}")
        self.upstream_key = found.key
        parsed = urlparse(found.url)
        if parsed.scheme != "http" or not parsed.hostname or not parsed.port:
            raise web.HTTPError(502, f"job {job_id} registered an unusable {endpoint} URL")
        # The allowlist is exactly the registered host: ProxyHandler checks it again.
        self.host_allowlist = [parsed.hostname]
        self.proxy_base = (
            sandbox.framed_base(job_id, endpoint)
            if self.framed
            else f"tony/proxy/{job_id}/{endpoint}"
        )
        if endpoint == "tensorboard":
            self.rewrite_response = (tensorboard.enable_autoreload,)
        return parsed.hostname, parsed.port

    def proxy_request_headers(self):
        """What reaches the upstream: not the user's Jupyter credentials (its token, its
        session cookie): the upstream is a job's, not Jupyter's."""
        headers = super().proxy_request_headers()
        for name in STRIPPED_HEADERS:
            if name in headers:
                del headers[name]
        if self.upstream_key:
            headers["Authorization"] = f"Bearer {self.upstream_key}"
        return headers

    def _build_proxy_request(self, host, port, proxied_path, body, **extra_opts):
        req = super()._build_proxy_request(host, port, proxied_path, body, **extra_opts)
        if self.framed:  # where it is proxied from, as the upstream may be told: not the capability
            public = f"{self.base_url}tony/proxy/{self.path_kwargs['job_id']}/"
            public += self.path_kwargs["endpoint"]
            for name in CONTEXT_HEADERS:
                if name in req.headers:
                    req.headers[name] = public
        return req

    def get_client_uri(self, protocol, host, port, proxied_path):
        uri = super().get_client_uri(protocol, host, port, proxied_path)
        base, sep, query = uri.partition("?")
        if not sep or "token" not in query:
            return uri
        kept = _without_token(query)  # Jupyter's token, in the URL
        return f"{base}?{kept}" if kept else base

    def navigation(self) -> bool:
        """A browser loading a page (a tab, an iframe), not a page's own request or a client."""
        return self.request.headers.get("Sec-Fetch-Mode", "").lower() == "navigate"

    async def get(self, job_id, endpoint, path=None):
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            await self.upstream(job_id, endpoint)  # 404 before the upgrade, not 101 then close
        return await super().get(job_id, endpoint, path)

    async def _forward(self, job_id: str, endpoint: str, path: str | None):
        host, port = await self.upstream(job_id, endpoint)
        if not self.framed and self.navigation() and self.request.method in ("GET", "HEAD"):
            # The page's own requests will carry no Jupyter cookie (sandbox.py): on to the
            # capability's route, which takes none.
            query = _without_token(self.request.query)
            where = self.base_url + sandbox.framed_base(job_id, endpoint) + quote(path or "/")
            return self.redirect(where + (f"?{query}" if query else ""))
        return await self.proxy(host, port, path or "/")

    async def http_get(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def post(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def put(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def delete(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def head(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def patch(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def options(self, job_id, endpoint, path=None):
        return await self._forward(job_id, endpoint, path)

    async def open(self, job_id, endpoint, path=None):
        host, port = await self.upstream(job_id, endpoint)
        return await self.proxy_open(host, port, path or "/")

    def check_xsrf_cookie(self) -> None:
        if self.framed:
            return  # the capability in the path is what a cross-site form cannot know
        self._check_xsrf_cookie()

    def _check_xsrf_cookie(self) -> None:
        """ProxyHandler leaves XSRF to the proxied app; TensorBoard has none. A state-changing
        request needs Jupyter's XSRF token, or (TensorBoard's own POSTs from its page in an
        iframe) a same-origin ``Origin`` header, which a cross-site form cannot forge."""
        if self.request.method in ("GET", "HEAD", "OPTIONS"):
            return
        try:
            JupyterHandler.check_xsrf_cookie(self)
        except web.HTTPError:
            origin = (self.request.headers.get("Origin") or "").lower()
            host = (self.request.headers.get("Host") or "").lower()
            if not origin or urlparse(origin).netloc != host:
                raise web.HTTPError(
                    403, "XSRF: send the _xsrf token (or a same-origin Origin header)"
                ) from None


class FramedProxyHandler(EndpointProxyHandler):
    """``/tony/framed/<job>/<endpoint>/<capability>/<path>``: the proxy for a sandboxed page,
    whose requests carry no Jupyter cookie; the capability (sandbox.py) opens this one
    endpoint instead."""

    framed = True

    async def prepare(self, *args, **kwargs) -> None:
        if not self.check_host():  # Jupyter's DNS-rebinding guard, as its own prepare()
            raise web.HTTPError(403)
        m = FRAMED.search(self.request.path)
        if m is None or not sandbox.opens(m.group(3), m.group(1), m.group(2)):
            raise web.HTTPError(404, "no such page (a capability of an earlier server?)")
        self.current_user = self._jupyter_current_user = "tony-framed"

    def check_origin(self, origin=None) -> bool:
        return True  # a sandboxed page's WebSocket: Origin "null"; the capability let it in

    async def options(self, *args, **kwargs):
        if self.request.headers.get("Access-Control-Request-Method"):  # a CORS preflight
            self.set_status(204)
            self.set_header("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE, PATCH")
            wanted = self.request.headers.get("Access-Control-Request-Headers")
            if wanted:
                self.set_header("Access-Control-Allow-Headers", wanted)
            self.set_header("Access-Control-Max-Age", "600")
            return self.finish()
        return await super().options(*args, **kwargs)


def proxy_handlers() -> list[tuple]:
    prefix = f"tony/proxy/({JOB_ID})/({ENDPOINT})"  # positional groups: AddSlashHandler
    framed = f"tony/framed/(?P<job_id>{JOB_ID})/(?P<endpoint>{ENDPOINT})/{sandbox.CAPABILITY}"
    return [
        (prefix, AddSlashHandler),  # TensorBoard's page uses URLs relative to its root
        (f"{prefix}(/.*)", EndpointProxyHandler),
        (f"{framed}(?P<path>/.*)", FramedProxyHandler),
    ]
