"""One call to the AM's API as its callers make it: which failures are retried, and what an
answer's status means on the calling side.

Shared by the job client (launcher/client.py, over requests) and the executor's AM link
(executor/link.py, over its own socket; a spare executor's poll, over urllib, reads statuses the
same way): ``call`` makes the exchange, once more for a GET whose connection failed or that
answered a bare 500, and raises ``Unanswered`` when no answer came; ``check`` turns an answer's
status into ``Stale`` (410: the task's attempt is over, its executor stops) or ``Refused``
(any other 4xx or 5xx). On the AM's side, am/http.py answers a stale attempt, in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

STALE = 410  # the task's attempt is over: the executor stops (am/http.py answers it)
GONE = (403, 404, STALE)  # a spare executor's poll: refused, no task came for it, let go
T = TypeVar("T")


class Stale(Exception):
    """The AM says this attempt is over."""


class Unanswered(OSError):
    """No answer came: the AM could not be reached, or it closed the connection."""


class Refused(Exception):
    """The AM answered with an error status (4xx other than 410, or 5xx)."""

    def __init__(self, status: int, error: str):
        super().__init__(f"{status} {error}".rstrip())
        self.status, self.error = status, error


def call(
    exchange: Callable[[], tuple[int, T]],
    *,
    method: str,
    lost: tuple[type[BaseException], ...] = (OSError,),
    retry_status: tuple[int, ...] = (),
    pause_s: float = 0.2,
    on_lost: Callable[[], object] = lambda: None,
) -> tuple[int, T]:
    """``exchange()``: its status and its answer. A GET is tried twice: a kept-alive connection
    the AM closed meanwhile fails at once (``lost``: what counts as that; ``on_lost`` runs after
    each, e.g. to drop the socket), and an AM has been seen to answer a GET once with a bare
    500 (``retry_status``, after ``pause_s``). Anything else (a POST may have been acted on) is
    tried once. ``Unanswered`` (from the last error) when no answer came."""
    tries = 2 if method == "GET" else 1
    for left in range(tries - 1, -1, -1):
        try:
            status, answer = exchange()
        except lost as e:
            on_lost()
            if not left:
                raise Unanswered(str(e)) from e
            continue
        if status not in retry_status or not left:
            return status, answer
        time.sleep(pause_s)
    raise AssertionError("unreachable: the last try returns or raises")


def check(status: int, error: str = "") -> None:
    """Nothing for a success; ``Stale`` for 410; ``Refused`` for any other error status."""
    if status == STALE:
        raise Stale(error or "attempt over")
    if status >= 400:
        raise Refused(status, error)
