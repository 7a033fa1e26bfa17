"""How a job's launch came out, as a typed record, and the one function that words it.

A launcher (local.py, yarn/amstart.py, the RM's submit in yarn/rm.py) returns or raises one of
these instead of a message: ``Started``, ``AmExited`` (with its log tail), ``TimedOut`` (with
the application's YARN state), ``QueueRefused``, ``Unreachable`` (the AM is up, this host
cannot reach it). ``words`` is the only place that turns one into what the user reads, with
the fix; ``started`` raises it as a ``BackendError`` (what the cell shows).
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import BackendError


@dataclass(frozen=True)
class Started:
    url: str = ""  # where the AM serves ("" where the launcher finds it otherwise: am.json)


@dataclass(frozen=True)
class AmExited:
    """The AM ended before it served. Locally: its exit ``code`` and its log's tail; on YARN:
    the application's ``state`` (``STATE/finalStatus``), its diagnostics and its log's tail."""

    code: int | None = None
    log_tail: str = ""
    app_id: str = ""
    state: str = ""
    diagnostics: str = ""
    am: str = "the job's AM"  # or "the warm AM" (launcher/yarn/warmkeeper.py)


@dataclass(frozen=True)
class TimedOut:
    """It did not serve within ``seconds``. Locally: ``log`` is its log; on YARN: ``app`` is
    the application's last report (its state, diagnostics, whether its container launched)
    and ``log_tail`` its container's log so far."""

    seconds: float
    log: Path | None = None
    app_id: str = ""
    app: dict = field(default_factory=dict)
    log_tail: str = ""
    am: str = "the job's AM"


@dataclass(frozen=True)
class QueueRefused:
    """The queue's ACL refused the user (at submission, or as the application's end)."""

    queue: str | None
    user: str | None
    why: str


@dataclass(frozen=True)
class Unreachable:
    """Up on its node (registered with the RM), but no connection from this host. ``ended``:
    its final state, when it ended before this host gave up trying."""

    app_id: str
    url: str
    error: str
    error_type: str = ""  # what to name when ``error`` has no ``[Errno N] ...`` in it
    ended: str = ""


Outcome = Started | AmExited | TimedOut | QueueRefused | Unreachable


def words(outcome: Outcome) -> str:
    """What the user reads about a launch that did not start (and the fix, where there is one)."""
    if isinstance(outcome, Started):
        return f"the job's AM serves at {outcome.url}" if outcome.url else "the job's AM serves"
    if isinstance(outcome, QueueRefused):
        return (
            f"YARN refused the job in queue {outcome.queue!r}: {outcome.why}. Submit to a queue "
            f"{outcome.user} may use (--queue NAME, tony.yarn.queue), or ask the cluster's "
            "administrators for access to this one"
        )
    if isinstance(outcome, AmExited):
        if not outcome.app_id:
            return (
                f"the job's AM exited with code {outcome.code} before it started serving:\n"
                f"{outcome.log_tail}"
            )
        return (
            f"{outcome.am} ended before it started serving ({outcome.app_id} {outcome.state}): "
            f"{outcome.diagnostics.strip()[:1500]}" + outcome.log_tail
        )
    if isinstance(outcome, TimedOut):
        return _timed_out(outcome)
    return _unreachable(outcome)


def started(outcome: Outcome) -> Started:
    """The outcome when the AM started; else its words, raised as a ``BackendError``."""
    if isinstance(outcome, Started):
        return outcome
    raise BackendError(words(outcome))


def _timed_out(outcome: TimedOut) -> str:
    """Worded by how far it got: locally, where its log is; on YARN a container launched
    (still localizing the job's files, or stuck starting: its log so far), or none yet (the
    queue)."""
    if not outcome.app_id:
        return f"the job's AM did not start within {outcome.seconds:g} s; see {outcome.log}"
    app = outcome.app
    diagnostics = " ".join(app.get("diagnostics", "").split())[:500]
    head = (
        f"{outcome.am} did not start within {outcome.seconds:g} s "
        f"({outcome.app_id} is {app.get('state')}"
    )
    if app.get("amContainerLogs") or "AM container is launched" in diagnostics:
        where = (app.get("amHostHttpAddress") or "").rsplit(":", 1)[0] or "its node"
        return (
            f"{head}: its container was launched on {where} but the AM never registered). It "
            "was still localizing the job's files (a packed environment takes longest, the "
            "first time on each node) or starting; see its log below, and the node's load. "
            "The application was killed." + outcome.log_tail
        )
    return f"{head}: {diagnostics}); the queue may be full. The application was killed."


def _unreachable(outcome: Unreachable) -> str:
    """Which host could not reach what, and what to open."""
    why = re.findall(r"\[Errno -?\d+\] [^'\")]+", outcome.error)
    app_id, ended = outcome.app_id, outcome.ended
    state = f"{app_id} RUNNING, registered with the ResourceManager"
    if ended:
        state = f"{app_id}, registered with the ResourceManager; it has ended since: {ended}"
    return (
        f"the job's AM {'was' if ended else 'is'} up at {urlsplit(outcome.url).netloc} "
        f"({state}), but this host ({socket.gethostname()}) cannot reach it: "
        f"{why[-1] if why else outcome.error_type}. The notebook's host must reach the "
        "cluster's nodes on the ports a job's AM and TensorBoard listen on (ephemeral ports): "
        "open them from here, or run the notebook on a host inside the cluster's network "
        "(`tony-jupyter doctor` checks this)." + ("" if ended else " The application was killed.")
    )
