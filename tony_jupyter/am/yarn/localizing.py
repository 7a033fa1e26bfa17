"""Which containers their NodeManagers are still localizing: fetching and unpacking the files
their tasks need (the packed environment above all) before the executor can start.

A node's first unpacking of a large environment can take minutes, and it is no fault of the
task's: the registration clock (``tony.task.registration-timeout-sec``, am/rules.py) starts for
a task only once its container runs. Localizing has its own, longer limit
(``tony.task.localization-timeout-sec``).

The NodeManager says which through the container's sub-state (``ContainerSubState.SCHEDULED``
while it localizes, ``RUNNING`` after), asked for on a thread of its own, once a second, for the
containers not seen running yet: never on the AM's loop, since a NodeManager that cannot be
reached holds the call for many seconds. A container whose NodeManager does not answer counts
as running from when it was started (the clock as it was before this module).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("tony_jupyter.am")

POLL_S = 1.0
SLOW_S = 30.0


@dataclass
class _Started:
    container: Any  # a YARN Container (JVM object)
    label: str  # the task it runs, for the log
    since: float  # when its start was asked for (time.time())
    running_at: float | None = None


class LocalizationWatch:
    def __init__(self, nm: Any):
        self.nm = nm  # a started NMClient
        self.lock = threading.Lock()
        self.containers: dict[str, _Started] = {}
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def started(self, cid: str, container: Any, label: str) -> None:
        """The AM asked ``container``'s NodeManager to start it (localizing comes first)."""
        with self.lock:
            self.containers[cid] = _Started(container, label, time.time())
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="localizing", daemon=True)
                self.thread.start()

    def forget(self, cid: str) -> None:
        with self.lock:
            self.containers.pop(cid, None)

    def localizing_since(self, cid: str) -> float | None:
        """When ``cid``'s localizing began, if it is still localizing; else None."""
        with self.lock:
            s = self.containers.get(cid)
            return s.since if s is not None and s.running_at is None else None

    def running_at(self, cid: str) -> float | None:
        """When ``cid`` was first seen running (past its localizing); None: not (yet) known."""
        with self.lock:
            s = self.containers.get(cid)
            return s.running_at if s is not None else None

    def stop(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.wait(POLL_S):
            with self.lock:
                waiting = [(cid, s) for cid, s in self.containers.items() if s.running_at is None]
            for cid, s in waiting:
                if self.stopped.is_set():
                    return
                state = self._left_localizing(s)
                if state is False:
                    continue
                now = time.time()
                with self.lock:
                    s.running_at = now if state is True else s.since
                if state is True:
                    took = now - s.since
                    # Slow ones to the AM's stderr (YARN's logs): a node's first unpacking.
                    say = log.warning if took >= SLOW_S else log.info
                    node = s.container.getNodeId()
                    say("%s: container %s on %s localized in %.1f s", s.label, cid, node, took)

    def _left_localizing(self, s: _Started) -> bool | str:
        """True once the NodeManager runs the container; "unknown" when it does not say (the
        clock then counts from the container's start); False while it localizes."""
        try:
            status = self.nm.getContainerStatus(s.container.getId(), s.container.getNodeId())
            sub = status.getContainerSubState()
        except Exception as e:  # noqa: BLE001 - a JVM exception: an NM gone or too old
            log.info("%s: no localizing state from its NodeManager (%s)", s.label, e)
            return "unknown"
        if sub is None:
            return "unknown"
        return str(sub.name()) != "SCHEDULED"
