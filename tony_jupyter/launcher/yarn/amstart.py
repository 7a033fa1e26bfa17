"""The wait until a YARN job's AM serves, from the RM's app report and the AM's NodeManager: the
queue's wait and the AM container's localization counted apart from the AM's own start, and why
it did not start, as a launch outcome (launcher/outcome.py)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import requests

from .. import outcome
from . import transport
from .rm import TERMINAL_APP_STATES, RMClient, am_placed

# From the end of the AM container's localization (as its NodeManager says): a first job's
# packed environment may take minutes to unpack on a node, and that counts against
# ``tony.task.localization-timeout-sec`` instead, as for the tasks' containers.
AM_START_TIMEOUT_S = 180.0
NM_ASK_EVERY_S = 2.0
# A NodeManager's own states of a container that it has not started yet (its REST API's).
NOT_LOCALIZED = ("NEW", "LOCALIZING", "SCHEDULED")
# The AM listens before it registers: no connection this long after, it is cut off from here.
UNREACHABLE_AFTER_S = 10.0


def wait_for_am(
    rm: RMClient,
    app_id: str,
    token: str,
    localization_timeout_s: float = 1800.0,
    accepted: Callable[[dict], None] | None = None,
) -> str:
    """Until the AM has registered (its address in the app report) and answers its API: its
    URL; else why not, worded (launcher/outcome.py), as a BackendError."""
    return outcome.started(await_am(rm, app_id, token, localization_timeout_s, accepted)).url


def await_am(
    rm: RMClient,
    app_id: str,
    token: str,
    localization_timeout_s: float = 1800.0,
    accepted: Callable[[dict], None] | None = None,
) -> outcome.Outcome:
    """How the AM's start came out: Started once it answers its API, or why not. The time its
    NodeManager spends localizing its container (up to ``localization_timeout_s``) does not
    count against AM_START_TIMEOUT_S, nor does the time the application waits in its queue for
    its AM's container (ACCEPTED without one: a busy queue is normal; Ctrl-C ends the wait).
    ``accepted`` is given each app report while the application is ACCEPTED (waiting.py says
    why it waits)."""
    auth = getattr(getattr(rm, "session", None), "auth", None)  # SPNEGO where secure
    localizing = _Localizing(auth, localization_timeout_s)
    queued, last = 0.0, time.monotonic()  # seconds waiting for the AM's container, so far
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    app: dict = {}
    unreached_since = 0.0
    unreached: tuple[str, Exception] | None = None  # the last try, while it made no connection
    while time.monotonic() < localizing.deadline() + queued:
        app = rm.app(app_id) or {}
        state = app.get("state")
        now = time.monotonic()
        if state == "ACCEPTED" and not am_placed(app):  # no AM container yet: queued
            queued += now - last
        last = now
        if state == "ACCEPTED":
            localizing.ask(app)
            if accepted is not None:
                accepted(app)
        if state in TERMINAL_APP_STATES and _queue_refused(app):
            why = " ".join(app.get("diagnostics", "").split())[:500]
            return outcome.QueueRefused(app.get("queue"), app.get("user"), why)
        if state in TERMINAL_APP_STATES and unreached:
            # It served its tasks, unseen from here: a job quicker than UNREACHABLE_AFTER_S.
            return unreachable(app_id, *unreached, ended=f"{state}/{app.get('finalStatus')}")
        if state in TERMINAL_APP_STATES:
            return outcome.AmExited(
                log_tail=am_log_tail(app),
                app_id=app_id,
                state=f"{state}/{app.get('finalStatus')}",
                diagnostics=app.get("diagnostics", ""),
            )
        url = am_url_from_report(app)
        if url:
            try:
                answered = session.get(f"{url}/api/v1/job", timeout=5).status_code
                unreached = None
                if answered == 200:
                    return outcome.Started(url)
            except requests.RequestException as e:
                # Registered with the RM, so listening (if not answering yet): no connection at
                # all from here, for a while, is a network's doing.
                unreached = (url, e) if not_connected(e) else None
                if unreached is None:
                    unreached_since = 0.0
                elif not unreached_since:
                    unreached_since = time.monotonic()
                elif time.monotonic() - unreached_since > UNREACHABLE_AFTER_S:
                    return unreachable(app_id, url, e)
        time.sleep(0.1)
    diagnostics = " ".join(app.get("diagnostics", "").split())
    launched = app.get("amContainerLogs") or "AM container is launched" in diagnostics
    tail = am_log_tail(app) if launched else ""
    seconds = AM_START_TIMEOUT_S + localizing.counted
    return outcome.TimedOut(seconds, app_id=app_id, app=app, log_tail=tail)


class _Localizing:
    """How long the AM's NodeManager has said it was localizing the AM's container: asked
    every NM_ASK_EVERY_S through its REST API while the app waits for its AM. A NodeManager that
    does not answer (an old one, one out of reach from here) counts as not localizing."""

    def __init__(self, auth, limit_s: float) -> None:
        self.http = transport.session(auth)  # an HTTPS-only NodeManager: the cluster's CA
        self.limit_s, self.seconds = limit_s, 0.0
        self.start = self.asked = time.monotonic()
        self.was = False  # what the NodeManager said the last time

    @property
    def counted(self) -> float:
        return min(self.seconds, self.limit_s)

    def deadline(self) -> float:
        return self.start + AM_START_TIMEOUT_S + self.counted

    def ask(self, app: dict) -> None:
        now = time.monotonic()
        if now - self.asked < NM_ASK_EVERY_S:
            return
        if self.was:
            self.seconds += now - self.asked
        self.asked, self.was = now, am_container_state(app, self.http) in NOT_LOCALIZED


def am_container(app: dict) -> tuple[str, str] | None:
    """The AM container's NodeManager (its web address) and id, from the app report's link to
    the container's logs; None before YARN has given the AM a container."""
    m = re.match(r"^(https?://[^/]+)/node/containerlogs/([^/]+)/", app.get("amContainerLogs", ""))
    return (m.group(1), m.group(2)) if m else None


def am_container_state(app: dict, http: requests.Session) -> str | None:
    """The AM container's state as its NodeManager tells it (LOCALIZING, RUNNING, ...), found
    through the app report's link to its logs; None when no container or no answer."""
    where = am_container(app)
    if where is None:
        return None
    base, cid = where
    try:
        r = http.get(f"{base}/ws/v1/node/containers/{cid}", timeout=5)
        return r.json()["container"]["state"] if r.status_code == 200 else None
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return None


def not_connected(error: requests.RequestException) -> bool:
    """No TCP connection was made (refused, no route, prohibited, timed out connecting), as
    against one made and then slow or closed."""
    return isinstance(error, requests.ConnectTimeout) or (
        "Failed to establish a new connection" in str(error)
    )


def unreachable(app_id: str, url: str, error: Exception, ended: str = "") -> outcome.Unreachable:
    return outcome.Unreachable(app_id, url, str(error), type(error).__name__, ended)


def _queue_refused(app: dict) -> bool:
    diag = (app.get("diagnostics") or "").lower()
    return "permission to submit" in diag or "cannot submit applications" in diag


def am_url_from_report(app: dict) -> str | None:
    # The AM registers its HTTP port as the "RPC port": the report then names host:port.
    addr = app.get("amRPCAddress") or ""
    if (
        app.get("state") == "RUNNING"
        and re.match(r"^[^:\s]+:\d+$", addr)
        and not addr.endswith(":-1")
    ):
        return f"http://{addr}"
    return None


def am_log_tail(app: dict, limit: int = 3000) -> str:
    """The AM container's stderr through the NodeManager's REST API, if it still has it."""
    where = am_container(app)
    if where is None:
        return ""
    base, cid = where
    texts, http = [], transport.session()  # an HTTPS-only NodeManager: the cluster's CA
    for name in ("am.stderr", "am.stdout"):
        try:
            r = http.get(f"{base}/ws/v1/node/containerlogs/{cid}/{name}", timeout=5)
        except requests.RequestException:
            continue
        if r.status_code == 200 and r.text.strip():
            texts.append(f"--- {name} ({cid}) ---\n{r.text[-limit:]}")
    return ("\n" + "\n".join(texts)) if texts else ""
