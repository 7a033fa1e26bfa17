"""``/tony/proxy/<job>/<endpoint>/<path>``: HTTP and WebSocket to what a job registered.

Built on jupyter-server-proxy's ``ProxyHandler`` (it authenticates in ``prepare()``). The
upstream host and port come only from the job's registered endpoints (``{"tensorboard":
"http://host:port/"}``): the URL names a job and an endpoint, never a host, so this is not an
open proxy. Everything after the endpoint is a path on that one upstream. The upstream gets the
endpoint's key (``Authorization: Bearer``; TensorBoard's guard takes it), which the AM gives
the job's token only, and none of the user's own credentials.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlparse

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server_proxy.handlers import AddSlashHandler, ProxyHandler
from tornado import web

from . import tensorboard
from .api import SETTINGS_KEY
from .jobs import JOB_ID, ServerJobs

ENDPOINT = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
STRIPPED_HEADERS = ("Authorization", "Cookie", "X-XSRFToken")


class EndpointProxyHandler(ProxyHandler):
    """Proxies to the endpoint the job registered (its AM says where), and nowhere else."""

    upstream_key: str | None = None  # the endpoint's key: set by upstream(), which runs first

    async def upstream(self, job_id: str, endpoint: str) -> tuple[str, int]:
        jobs: ServerJobs = self.settings[SETTINGS_KEY + ".jobs"]
        found = await jobs.endpoint(job_id, endpoint)  # 404 for an unknown job
        if not found or not isinstance(found.get("url"), str):
            raise web.HTTPError(404, f"job {job_id} has no endpoint {endpoint!r}")
        self.upstream_key = found.get("key")
        parsed = urlparse(found["url"])
        if parsed.scheme != "http" or not parsed.hostname or not parsed.port:
            raise web.HTTPError(502, f"job {job_id} registered an unusable {endpoint} URL")
        # The allowlist is exactly the registered host: ProxyHandler checks it again.
        self.host_allowlist = [parsed.hostname]
        self.proxy_base = f"tony/proxy/{job_id}/{endpoint}"
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

    def get_client_uri(self, protocol, host, port, proxied_path):
        uri = super().get_client_uri(protocol, host, port, proxied_path)
        base, sep, query = uri.partition("?")
        if not sep:
            return uri
        pairs = parse_qsl(query, keep_blank_values=True)
        if not any(k == "token" for k, _ in pairs):
            return uri
        kept = [(k, v) for k, v in pairs if k != "token"]  # Jupyter's token, in the URL
        return f"{base}?{urlencode(kept)}" if kept else base

    async def get(self, job_id, endpoint, path=None):
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            await self.upstream(job_id, endpoint)  # 404 before the upgrade, not 101 then close
        return await super().get(job_id, endpoint, path)

    async def _forward(self, job_id: str, endpoint: str, path: str | None):
        host, port = await self.upstream(job_id, endpoint)
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


def proxy_handlers() -> list[tuple]:
    prefix = f"tony/proxy/({JOB_ID})/({ENDPOINT})"  # positional groups: AddSlashHandler
    return [
        (prefix, AddSlashHandler),  # TensorBoard's page uses URLs relative to its root
        (f"{prefix}(/.*)", EndpointProxyHandler),
    ]
