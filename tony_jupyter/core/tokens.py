"""Hadoop delegation tokens, as they travel between the notebook, the AM and the tasks.

A token is Hadoop's ``Token`` Writable (identifier, password, kind, service) in its URL-safe
base64 "urlString" form, the form WebHDFS hands out and the RM's REST API takes in an
application's credentials. Only the label is ever rewritten here: WebHDFS labels what it hands
out ``WEBHDFS delegation``, which Hadoop's RPC client (the AM's JVM) and the RM's renewer
only use for HDFS under the kind ``HDFS_DELEGATION_TOKEN``; and its service is the NameNode's
own "ip:port", where on an HA nameservice Hadoop's clients name the token ``ha-hdfs:<ns>``.
The identifier and password, what the NameNode checks, stay as they are.

Inside a task, :func:`hdfs_token` is the current HDFS token: from ``TONY_HDFS_TOKEN`` at
start, then from the credentials file that the heartbeat sidecar rewrites whenever the AM has
newer tokens (the notebook renews them past their maximum lifetime).
"""

from __future__ import annotations

import base64
import io
import json
import os
from dataclasses import dataclass

from . import jobdir
from .protocol import ExecutorEnv

HDFS_KIND = "HDFS_DELEGATION_TOKEN"
WEBHDFS_KIND = "WEBHDFS delegation"
RM_KIND = "RM_DELEGATION_TOKEN"
# A task's credentials, as its executor's environment carries them (ExecutorEnv's).
ENV_TOKEN = ExecutorEnv.var("hdfs_token")
CA_ENV = "TONY_CA_BUNDLE"  # as the notebook side reads it (launcher/yarn/transport.py)
ENV_FILE = ExecutorEnv.var("credentials_file")
ENV_VERSION = ExecutorEnv.var("credentials_version")
FILE_NAME = ".tony-credentials.json"


# --- Hadoop's variable-length integers (WritableUtils.writeVLong / readVLong) ----------------


def write_vlong(out: io.BytesIO, i: int) -> None:
    if -112 <= i <= 127:
        out.write(bytes([i & 0xFF]))
        return
    length = -112
    if i < 0:
        i ^= -1
        length = -120
    tmp = i
    while tmp:
        tmp >>= 8
        length -= 1
    out.write(bytes([length & 0xFF]))
    n = -(length + 120) if length < -120 else -(length + 112)
    for idx in range(n, 0, -1):
        out.write(bytes([(i >> ((idx - 1) * 8)) & 0xFF]))


def read_vlong(inp: io.BytesIO) -> int:
    first = _signed(_byte(inp))
    if first >= -112:
        return first
    size = (-119 - first) if first < -120 else (-111 - first)
    i = 0
    for _ in range(size - 1):
        i = (i << 8) | _byte(inp)
    negative = first < -120 or -112 <= first < 0
    return i ^ -1 if negative else i


def _byte(inp: io.BytesIO) -> int:
    b = inp.read(1)
    if not b:
        raise ValueError("truncated token")
    return b[0]


def _signed(b: int) -> int:
    return b - 256 if b > 127 else b


def _read_bytes(inp: io.BytesIO) -> bytes:
    n = read_vlong(inp)
    data = inp.read(n)
    if n < 0 or len(data) != n:
        raise ValueError("truncated token")
    return data


def _write_bytes(out: io.BytesIO, data: bytes) -> None:
    write_vlong(out, len(data))
    out.write(data)


@dataclass(frozen=True)
class Token:
    identifier: bytes
    password: bytes
    kind: str
    service: str

    @classmethod
    def decode(cls, url_string: str) -> Token:
        try:
            raw = base64.urlsafe_b64decode(url_string + "=" * (-len(url_string) % 4))
            inp = io.BytesIO(raw)
            ident, pw = _read_bytes(inp), _read_bytes(inp)
            kind, service = _read_bytes(inp).decode(), _read_bytes(inp).decode()
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"not a Hadoop token ({e})") from None
        return cls(ident, pw, kind, service)

    def encode(self) -> str:
        out = io.BytesIO()
        for part in (self.identifier, self.password, self.kind.encode(), self.service.encode()):
            _write_bytes(out, part)
        return base64.urlsafe_b64encode(out.getvalue()).decode().rstrip("=")

    def relabel(self, kind: str, service: str | None = None) -> Token:
        """The same token under ``kind`` (and ``service``, else its own)."""
        return Token(
            self.identifier, self.password, kind, self.service if service is None else service
        )

    def max_date_ms(self) -> int | None:
        """The latest an HDFS delegation token can be renewed to (its identifier is Hadoop's
        AbstractDelegationTokenIdentifier Writable: version, owner, renewer, real user, issue
        date, max date, ...); None if unreadable. YARN's identifiers are protobuf: not these."""
        try:
            inp = io.BytesIO(self.identifier)
            _byte(inp)  # version
            for _ in range(3):
                _read_bytes(inp)
            read_vlong(inp)  # issue date
            return read_vlong(inp)
        except ValueError:
            return None


def alias(token: Token) -> str:
    """The name a token goes under in an application's credentials: its service (the
    NameNode's address, or ``ha-hdfs:<ns>``), else its kind; the same on submission and on
    renewal, so that a new token replaces the old one (and, in a JVM, its per-NameNode clones)."""
    return token.service or token.kind


# --- inside a task -----------------------------------------------------------------------------


def hdfs_token(env: os._Environ | dict | None = None) -> str | None:
    """The task's current HDFS delegation token (urlString), or None on a cluster without
    Kerberos."""
    env = os.environ if env is None else env
    path = env.get(ENV_FILE)
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                got = json.load(f).get("tokens", {}).get("hdfs")
            if got:
                return got
        except (OSError, ValueError):
            pass
    return env.get(ENV_TOKEN) or None


def tokens_env(credentials: dict, workdir: str) -> dict[str, str]:
    """What an executor starts with on a secure cluster: the HDFS token, the version of the
    AM's credentials it is, and where newer ones will be written (in ``workdir``)."""
    env = {ENV_VERSION: str(credentials["version"]), ENV_FILE: f"{workdir}/{FILE_NAME}"}
    if credentials["tokens"].get("hdfs"):
        env[ENV_TOKEN] = credentials["tokens"]["hdfs"]
    return env


def write_credentials(path: str, credentials: dict) -> None:
    """Replace the task's credentials file at once (readers never see half of it)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(credentials, f)
    os.replace(tmp, path)


def verify_each_call(session, verify: str | bool) -> None:
    """Make ``session`` (a requests.Session another library made, e.g. fsspec's WebHDFS) pass
    ``verify`` on each call: requests lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` override a
    session's own ``verify`` otherwise, and a cluster's CA would lose to the shell's bundle."""
    if getattr(session, "_tony_verify", None) == verify:
        return
    request = getattr(session, "_tony_request", session.request)

    def call(method, url, *args, **kwargs):
        kwargs.setdefault("verify", verify)
        return request(method, url, *args, **kwargs)

    session._tony_request, session._tony_verify, session.request = request, verify, call


# A standby NameNode asked with a delegation token: WebHDFS's authentication cannot check the
# token there, and answers 403 with a SecurityException ("Failed to obtain user group
# information: org.apache.hadoop.security.token.SecretManager$InvalidToken: StandbyException")
# instead of the StandbyException that WebHDFS clients move to the other NameNode on.
TOKEN_AT_STANDBY = "InvalidToken: StandbyException"


def standby_with_token(response) -> bool:
    """Whether a WebHDFS answer is a standby NameNode's to a request with a delegation token."""
    if response.status_code != 403:
        return False
    try:
        remote = response.json().get("RemoteException") or {}
    except ValueError:
        return False
    return TOKEN_AT_STANDBY in str(remote.get("message", ""))


def as_standby_exception(response) -> None:
    """Make such an answer the StandbyException it stands for (its message kept), which
    HdfsCLI's client fails over on as on any standby's."""
    message = response.json()["RemoteException"]["message"]
    response._content = json.dumps(
        {
            "RemoteException": {
                "exception": "StandbyException",
                "javaClassName": "org.apache.hadoop.ipc.StandbyException",
                "message": f"{message} (a standby NameNode, asked with a delegation token)",
            }
        }
    ).encode()


def webhdfs_client(url: str, user: str | None, timeout: float = 30):
    """An HdfsCLI client for a task: on a secure cluster every request carries the task's
    current delegation token (renewed ones included), else the user's name (simple
    authentication); on an HA pair (``url`` ``;``-separated) it moves past a standby
    NameNode, asked with a token or not."""
    import requests
    from hdfs import Client, InsecureClient

    class _TokenSession(requests.Session):
        def request(self, method, url, **kwargs):  # type: ignore[override]
            kwargs.setdefault("verify", ca_bundle())
            if hdfs_token():
                kwargs["params"] = {**(kwargs.get("params") or {}), "delegation": hdfs_token()}
            r = super().request(method, url, **kwargs)
            if standby_with_token(r):  # on to the other NameNode of an HA pair
                as_standby_exception(r)
            return r

    if not hdfs_token():
        return InsecureClient(url, user=user, timeout=timeout, session=_TokenSession())
    return Client(url, session=_TokenSession(), timeout=timeout)


def ca_bundle() -> str | bool:
    """What a task verifies an HTTPS WebHDFS against: the notebook's ``TONY_CA_BUNDLE`` shipped
    with the job (its container's ``ca-bundle.pem``), else ``TONY_CA_BUNDLE`` as the NodeManager
    passes it on (a TLS devcluster's does), else requests' own choice."""
    bundle_dir = os.environ.get(ExecutorEnv.var("bundle_dir"))
    shipped = os.path.join(bundle_dir, jobdir.CA_BUNDLE) if bundle_dir else ""
    if shipped and os.path.isfile(shipped):
        return shipped
    return os.environ.get(CA_ENV) or os.environ.get("REQUESTS_CA_BUNDLE") or True
