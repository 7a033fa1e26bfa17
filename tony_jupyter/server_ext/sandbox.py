"""What a job serves reaches the browser in an opaque origin, never in Jupyter's.

A page a task serves (TensorBoard, or anything its code put on an endpoint's port) is code
the notebook did not write. Served from Jupyter's origin, its scripts could call Jupyter's API
with the user's session and set Jupyter's cookies. So every proxied answer carries
``Content-Security-Policy: sandbox ...`` without ``allow-same-origin`` (its scripts run, in an
origin of their own), and no ``Set-Cookie``; the iframes that show it are sandboxed alike.

A sandboxed page's own requests are cross-site: they carry no Jupyter cookie. So a browser's
navigation to ``/tony/proxy/<job>/<endpoint>/...``, which Jupyter authenticates, is sent on to
``/tony/framed/<job>/<endpoint>/<capability>/...``, where the capability, an HMAC of the job and
the endpoint under a key this server process drew at start, stands in for Jupyter's auth: it
opens that one endpoint of that one job, for as long as this server runs, and nothing else.
It never reaches the upstream (the proxy sends it neither the path prefix nor a Referer).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from ..core.proxyurls import POLICY

__all__ = ["CAPABILITY", "POLICY", "capability"]
CAPABILITY = r"[A-Za-z0-9_-]{43}"

_KEY = secrets.token_bytes(32)  # this server process's: its capabilities end with it


def capability(job_id: str, endpoint: str) -> str:
    mac = hmac.new(_KEY, f"{job_id}/{endpoint}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def opens(cap: str, job_id: str, endpoint: str) -> bool:
    return hmac.compare_digest(cap.encode(), capability(job_id, endpoint).encode())


def framed_base(job_id: str, endpoint: str) -> str:
    """The framed route's prefix for one endpoint (no base_url, no leading or trailing /)."""
    return f"tony/framed/{job_id}/{endpoint}/{capability(job_id, endpoint)}"
