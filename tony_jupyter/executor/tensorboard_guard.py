"""The guard in front of a job's TensorBoard: a WSGI middleware around TensorBoard's own app.

On YARN, TensorBoard listens on every interface of a node that other users' containers share;
locally, on a loopback port any local user can connect to. It shows the job's data, so it admits
only (as YARN's ``AmIpFilter`` does for ApplicationMasters' web UIs):

- ``Authorization: Bearer <key>``: the Jupyter server's ``/tony/proxy``, which asks the AM for
  the key with the job's token;
- its cookie, which a first visit with ``?tony_token=<key>`` sets (then a redirect to the same
  URL without it, so the key stays out of the address bar and the history);
- requests under ``/<path_key>/`` (the application's tracking URL, so the ResourceManager's web
  proxy): on a cluster without Kerberos every one, as YARN does; on a secure cluster those
  whose ``proxy-user`` cookie (the RM's proxy sets it to the user it authenticated) names the
  job's owner. ``path_key`` is secret: the RM tells the tracking URL only to those with the
  application's view ACL, and a stranger's request through the proxy carries their own name.

Everything else gets 403 and a one-line reason, never TensorBoard's content. The secrets travel
to the TensorBoard process in its environment (read once, then removed from it), never on its
command line, which ``ps`` shows to every user.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from urllib.parse import parse_qsl, quote, unquote_plus, urlencode

from ..core.protocol import GuardConfig

__all__ = ["Guard", "GuardConfig"]

TOKEN_PARAM = "tony_token"  # ?tony_token=<key>: a browser's first visit
PROXY_USER_COOKIE = "proxy-user"  # set by YARN's WebAppProxyServlet
StartResponse = Callable[..., object]
WSGIApp = Callable[[dict, StartResponse], Iterable[bytes]]


def _cookies(environ: dict) -> dict[str, str]:
    jar: dict[str, str] = {}
    for part in environ.get("HTTP_COOKIE", "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name not in jar:
            jar[name] = value.strip().strip('"')
    return jar


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())


class Guard:
    """The WSGI middleware: ``Guard(tensorboard_app, config)``."""

    def __init__(self, app: WSGIApp, config: GuardConfig):
        self.app, self.config = app, config
        self.prefix = "/" + config.path_key
        digest = hashlib.sha256(config.key.encode()).hexdigest()
        # One cookie per TensorBoard (cookies are per host, not per port), holding a value
        # derived from the key rather than the key itself.
        self.cookie_name = "tony_tb_" + digest[:12]
        self.cookie_value = hmac.new(config.key.encode(), b"cookie", hashlib.sha256).hexdigest()

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        under = path == self.prefix or path.startswith(self.prefix + "/")
        query = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        given = [v for k, v in query if k == TOKEN_PARAM]
        if given:
            if not _same(given[0], self.config.key):
                return self.refuse(start_response, f"wrong {TOKEN_PARAM}")
            rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAM])
            # WSGI paths are bytes decoded as latin-1 (PEP 3333): quote those bytes.
            raw = (environ.get("SCRIPT_NAME", "") + path).encode("latin-1", "replace")
            location = quote(raw) + ("?" + rest if rest else "")
            cookie = f"{self.cookie_name}={self.cookie_value}; Path=/; HttpOnly; SameSite=Lax"
            headers = [("Location", location), ("Set-Cookie", cookie)]
            return self.reply(start_response, "302 Found", b"", headers)
        reason = self.refusal(environ, under)
        if reason is not None:
            return self.refuse(start_response, reason)
        if under:
            if path == self.prefix:  # TensorBoard's page uses URLs relative to its root
                found = [("Location", self.prefix + "/")]
                return self.reply(start_response, "302 Found", b"", found)
            environ = {
                **environ,
                "SCRIPT_NAME": environ.get("SCRIPT_NAME", "") + self.prefix,
                "PATH_INFO": path[len(self.prefix) :],
            }
        return self.app(environ, start_response)

    def refusal(self, environ: dict, under: bool) -> str | None:
        """None to admit the request, else why not."""
        auth = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and _same(token.strip(), self.config.key):
            return None
        jar = _cookies(environ)
        if _same(jar.get(self.cookie_name, ""), self.cookie_value):
            return None
        if under:
            if not self.config.secure:
                return None
            user = unquote_plus(jar.get(PROXY_USER_COOKIE, ""))
            if not user:
                return "no proxy-user: open it through the ResourceManager's web proxy"
            # The RM's proxy may name the user by principal (alice@REALM): its short name.
            if user.split("@", 1)[0].split("/", 1)[0] != self.config.owner:
                return f"{user} is not the owner of this job"
            return None
        if auth:
            return "wrong key"
        return (
            "this job's TensorBoard: open it through Jupyter (/tony/proxy/<job>/tensorboard/) "
            "or the ResourceManager's web proxy"
        )

    @staticmethod
    def reply(
        start_response: StartResponse, status: str, body: bytes, headers: Iterable = ()
    ) -> Iterable[bytes]:
        plain = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Length", str(len(body))),
        ]
        start_response(status, plain + list(headers))
        return [body]

    def refuse(self, start_response: StartResponse, reason: str) -> Iterable[bytes]:
        return self.reply(start_response, "403 Forbidden", f"403: {reason}\n".encode())
