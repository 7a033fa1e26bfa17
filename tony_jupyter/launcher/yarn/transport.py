"""How the notebook side speaks HTTP(S) to the cluster's masters: one session factory that
verifies TLS against a CA bundle, and one place that words a transport failure.

The bundle is ``TONY_CA_BUNDLE``, else ``REQUESTS_CA_BUNDLE``, else the system's trust store
(OpenSSL's default CA file), else certifi's (requests' own). Verification is never turned off.
"""

from __future__ import annotations

import os
import socket
import ssl
from urllib.parse import urlparse

import requests

from ...core.errors import BackendError

CA_ENV = "TONY_CA_BUNDLE"


def ca_bundle() -> str | bool:
    """The PEM file HTTPS answers are verified against (True: certifi's bundle)."""
    for name in (CA_ENV, "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value:
            return value
    system = ssl.get_default_verify_paths().cafile
    return system if system and os.path.isfile(system) else True


class _Session(requests.Session):
    """requests lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` override a session's own
    ``verify`` on every call; the bundle chosen here must win (HdfsCLI calls through it too)."""

    def request(self, method, url, *args, **kwargs):
        kwargs.setdefault("verify", self.verify)
        return super().request(method, url, *args, **kwargs)


def session(auth=None) -> requests.Session:
    """A session for the cluster's REST APIs: TLS verified against :func:`ca_bundle`; ``auth``
    is SPNEGO on a secure cluster."""
    named = os.environ.get(CA_ENV)
    if named and not os.access(named, os.R_OK):
        raise BackendError(
            f"cannot read {CA_ENV}={named}: point it at a readable PEM file with the cluster's "
            "CA certificates, or unset it to use the system's trust store"
        )
    s = _Session()
    s.auth = auth
    s.verify = ca_bundle()
    return s


def shipped_ca_bundle(name: str) -> dict[str, bytes]:
    """``{name: the PEM}`` when ``TONY_CA_BUNDLE`` names one: the job's tasks get it as a file
    and verify the cluster's HTTPS (WebHDFS) against it, as this side does; else nothing, and
    they use what their nodes trust."""
    path = os.environ.get(CA_ENV)
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            return {name: f.read()}
    except OSError as e:
        raise BackendError(
            f"cannot read {CA_ENV}={path} ({e.strerror}): point it at a readable PEM file with "
            "the cluster's CA certificates, or unset it"
        ) from None


def _bundle_name(verify: str | bool | None) -> str:
    if verify is True or verify is None:
        return "certifi's CA bundle (no TONY_CA_BUNDLE, REQUESTS_CA_BUNDLE or system bundle)"
    return f"{verify} (from {CA_ENV})" if verify == os.environ.get(CA_ENV) else str(verify)


def speaks_tls(url: str, timeout: float = 2.0) -> bool:
    """Whether the host and port of an ``http://`` URL answer a TLS handshake: a plain-HTTP
    client pointed at an HTTPS-only master."""
    u = urlparse(url)
    if u.scheme != "http" or not u.hostname:
        return False
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # only: is this TLS at all?
    try:
        with socket.create_connection((u.hostname, u.port or 80), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=u.hostname):
                return True
    except (OSError, ssl.SSLError):
        return False


def describe(err: requests.RequestException, url: str, verify: str | bool | None) -> str:
    """What went wrong calling ``url``, in a few words, with the fix when we know it."""
    host = urlparse(url).hostname
    if isinstance(err, requests.exceptions.SSLError):
        reason = str(err.args[0] if err.args else err)
        reason = reason.split("(Caused by ")[-1].rstrip(")")[:300]
        return (
            f"the TLS certificate of {host} ({url}) does not verify against "
            f"{_bundle_name(verify)}: {reason}. Set {CA_ENV} to a PEM file with the cluster's "
            "CA certificates (README: 'High availability and TLS' says how to get one from the "
            "cluster's truststore)"
        )
    if speaks_tls(url):
        return (
            f"{url} speaks HTTPS, not HTTP: the cluster is HTTPS-only. Copy its yarn-site.xml "
            "and hdfs-site.xml (yarn.http.policy, dfs.http.policy = HTTPS_ONLY) into "
            "HADOOP_CONF_DIR, or use an https:// URL"
        )
    return type(err).__name__
