"""What JobClient needs for a YARN job: the AM's address from the RM's app report, the job's
end as YARN saw it when the AM is gone, and a kill that works without the AM.

A YARN job's local record (``$TONY_JUPYTER_HOME/jobs/<application id>/``) holds spec.json,
token and yarn.json (RM and WebHDFS addresses, user, staging path); JobClient copies the AM's
final status, events, logs and result next to them once it sees the job end, so `%tony status`
and `logs` keep working after the AM container is gone.
"""

from __future__ import annotations

import time

from ...errors import BackendError
from .conf import Address
from .rm import TERMINAL_APP_STATES, RMClient
from .staging import Staging

# An AM registers, then serves until it exits; after it unregisters the app is FINISHING
# while the AM lingers for the notebook to fetch results.
LIVE_STATES = ("RUNNING", "FINISHING")
FINAL_TO_STATE = {"SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}


def rm_client(info: dict) -> RMClient:
    return RMClient(Address(info["rm_url"], "the job's record (yarn.json)"), info["user"], 5.0)


def app_report(info: dict) -> dict | None:
    try:
        return rm_client(info).app(info["app_id"])
    except BackendError:
        return None


def am_url(app: dict | None) -> str | None:
    if not app or app.get("state") not in LIVE_STATES:
        return None
    addr = app.get("amRPCAddress") or ""
    host, _, port = addr.rpartition(":")
    return f"http://{addr}" if host and port.isdigit() else None


def ended(app: dict | None) -> bool:
    return bool(app) and app.get("state") in TERMINAL_APP_STATES


def lost_snapshot(info: dict, spec: dict, app: dict | None) -> dict:
    """The job as YARN reports it, when neither the AM nor a saved final status is there."""
    if app is None:
        state, reason = "LOST", "the ResourceManager does not know the application (any more)"
    elif app.get("state") in TERMINAL_APP_STATES:
        state = FINAL_TO_STATE.get(app.get("finalStatus", ""), "FAILED")
        if app.get("state") == "KILLED":
            state = "KILLED"
        reason = (app.get("diagnostics") or "").strip() or f"YARN: {app['state']}"
    else:
        state, reason = "STARTING", f"YARN: {app.get('state')}"
    return {
        "job_id": info["app_id"],
        "name": spec.get("name", ""),
        "state": state,
        "reason": reason,
        "attempt": 0,
        "max_attempts": spec.get("max_attempts", 1),
        "attempts": [],
        "tasks": [],
        "started": (app or {}).get("startedTime", 0) / 1000 or None,
        "finished": ((app or {}).get("finishedTime") or 0) / 1000 or None,
        "now": time.time(),
        "endpoints": {},
        "backend": "yarn",
    }


def kill(info: dict, timeout: float = 30.0) -> None:
    """Kill through the RM (the AM is unreachable) and delete the staging directory."""
    rm_client(info).kill(info["app_id"], timeout)
    remove_staging(info)


def remove_staging(info: dict) -> None:
    staging = Staging(Address(info["webhdfs_url"], "yarn.json"), info["user"], "")
    try:
        staging.remove(info["app_id"])
    except BackendError:
        pass


def wait_end(info: dict, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        app = app_report(info)
        if app is None or ended(app):
            return True
        time.sleep(0.2)
    return False
