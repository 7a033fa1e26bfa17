"""The client of a YARN job: the AM's address from the RM's app report, the job's end as YARN
saw it when the AM is gone, and a kill that works without the AM.

A YARN job's local record (``$TONY_JUPYTER_HOME/jobs/<application id>/``) holds spec.json,
token and yarn.json (RM and WebHDFS addresses, user, staging path); YarnJobClient copies the
AM's final status, events, logs and result next to them once it sees the job end, so
`%tony status` and `logs` keep working after the AM container is gone.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

from ...core import jobdir
from ...core.errors import BackendError
from ...core.protocol import Amount, JobSnapshot, JobState, QueueWait
from ...core.yarninfo import YarnInfo
from ..client import JobClient, JobRecord
from . import waiting
from .rm import TERMINAL_APP_STATES, RMClient, am_placed
from .secure import from_record

# An AM registers, then serves until it exits; after it unregisters the app is FINISHING
# while the AM lingers for the notebook to fetch results.
LIVE_STATES = ("RUNNING", "FINISHING")
# A running application as an RM that has just taken over reports it until its AM re-registers.
RECOVERED_STATES = ("ACCEPTED",)
# While a job waits, its queue's figures are asked of the RM at most this often per client.
WAIT_ASK_EVERY_S = 2.0
# Tasks without a container for this long wait (an allocation takes a few heartbeats).
WAIT_AFTER_S = 1.0
FINAL_TO_STATE = {
    "SUCCEEDED": JobState.SUCCEEDED,
    "FAILED": JobState.FAILED,
    "KILLED": JobState.KILLED,
}


def rm_client(info: YarnInfo) -> RMClient:
    return from_record(info)[0]


def app_report(info: YarnInfo) -> dict | None:
    if not info.rm_url:  # a damaged yarn.json (JobRecord.yarn): no RM to ask
        return None
    try:
        return rm_client(info).app(info.app_id)
    except BackendError:
        return None


def am_url(app: dict | None) -> str | None:
    if not app or app.get("state") not in LIVE_STATES:
        return None
    addr = app.get("amRPCAddress") or ""
    host, _, port = addr.rpartition(":")
    return f"http://{addr}" if host and port.isdigit() else None


def ended(app: dict | None) -> bool:
    return app is not None and app.get("state") in TERMINAL_APP_STATES


def lost_snapshot(app_id: str, spec: dict, app: dict | None) -> JobSnapshot:
    """The job as YARN reports it, when neither the AM nor a saved final status is there."""
    if app is None:
        state = JobState.LOST
        reason = "the ResourceManager does not know the application (any more)"
    elif app.get("state") in TERMINAL_APP_STATES:
        state = FINAL_TO_STATE.get(app.get("finalStatus", ""), JobState.FAILED)
        if app.get("state") == "KILLED":
            state = JobState.KILLED
        reason = (app.get("diagnostics") or "").strip() or f"YARN: {app['state']}"
    else:
        state, reason = JobState.STARTING, f"YARN: {app.get('state')}"
    return JobSnapshot.lost(
        app_id,
        {**spec, "backend": "yarn"},
        reason,
        state=state,
        started=(app or {}).get("startedTime", 0) / 1000 or None,
        finished=((app or {}).get("finishedTime") or 0) / 1000 or None,
    )


def kill(info: YarnInfo, timeout: float = 30.0) -> None:
    """Kill through the RM (the AM is unreachable) and delete the staging directory."""
    if not info.rm_url:
        raise BackendError(
            f"{info.app_id}'s record has no usable {jobdir.YARN_INFO}: kill it with "
            f"`yarn application -kill {info.app_id}`"
        )
    rm_client(info).kill(info.app_id, timeout)
    remove_staging(info)


def remove_staging(info: YarnInfo) -> None:
    try:
        staging = from_record(info)[1]
        staging.remove(info.app_id)
    except BackendError:
        pass


def wait_end(info: YarnInfo, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        app = app_report(info)
        if app is None or ended(app):
            return True
        time.sleep(0.2)
    return False


class YarnJobClient(JobClient):
    """A job whose AM runs in a YARN container: found through the RM, and its record copied
    here once it has ended (the container's files vanish with it)."""

    def __init__(self, record: JobRecord):
        super().__init__(record)
        # damaged: no RM to ask (the record says so, JobRecord.damage_note)
        self.info = record.yarn() or YarnInfo(app_id=record.id, rm_url="")
        self._url: str | None = None
        self._app: dict | None = None
        self._unanswered: set[str] = set()  # AM addresses that did not answer this client
        self._wait: QueueWait | None = None  # the last wait seen, and when it was asked
        self._wait_asked = 0.0
        self._unallocated: tuple[tuple[str, ...], float] = ((), 0.0)  # and since when
        self._rm: RMClient | None = None

    def am_url(self) -> str | None:
        """A YARN AM registers its HTTP address with the RM; once the app has ended, or the
        final status is saved here, the RM is not asked again."""
        if self._url is None and not self.record.layout.status.exists():
            if not ended(self._app):
                self._app = app_report(self.info)
                self._url = am_url(self._app) or self._recovering_url()
        return self._url

    def _recovering_url(self) -> str | None:
        """The AM's address as the job's start found it, while the RM gives none and has not
        seen the application end: no RM answers (an HA pair's failover under way), or the new
        active RM has recovered it as ACCEPTED until its AM re-registers (work-preserving
        recovery), though the AM serves on. Where that AM is gone (a new attempt's), the call
        to it fails, and this client reads the job as the RM reports it from then on."""
        if self._app is not None and self._app.get("state") not in RECOVERED_STATES:
            return None
        known = self.info.am_url
        return None if known in self._unanswered else known

    def _am_unreachable(self) -> None:
        if self._url is not None:
            self._unanswered.add(self._url)
        self._url = None

    def lost_snapshot(self, spec: dict) -> JobSnapshot:
        if not ended(self._app):  # a report cached while it ran is stale once the AM is gone
            self._app = app_report(self.info)
        return lost_snapshot(self.info.app_id, spec, self._app)

    def snapshot(self) -> JobSnapshot:
        snap = super().snapshot()
        if snap.terminal or snap.stall is not None:
            self._wait = None
            return snap
        return replace(snap, waiting=self._waiting(snap))

    def _waiting(self, snap: JobSnapshot) -> QueueWait | None:
        """Why the job waits, while its application is ACCEPTED (its AM not placed) or some of
        its tasks have no container yet: the RM's figures for its queue (launcher/yarn/
        waiting.py), asked at most every WAIT_ASK_EVERY_S."""
        spec = self.record.read_json(jobdir.SPEC) or {}
        app = self._app or {}
        accepted = app.get("state") == "ACCEPTED" and not am_placed(app)  # queued, no AM yet
        if accepted and snap.state == JobState.STARTING and not snap.tasks:
            who: tuple[str, ...] = ("AM",)
            asked = Amount(int(spec.get("am_memory_mb", 0)), int(spec.get("am_vcores", 0)))
            label = None
            since = (self._app or {}).get("startedTime", 0) / 1000 or time.time()
        else:
            who = tuple(snap.unallocated)
            if not who:
                self._wait = None
                return None
            if self._unallocated[0] != who:
                self._unallocated = (who, time.time())
            since = self._unallocated[1]
            if time.time() - since < WAIT_AFTER_S:  # allocations take a moment: no wait yet
                return None
            asked, label = waiting.task_ask(spec, list(who))
        w = self._wait
        if (
            w is not None
            and w.waiting_for == who
            and time.time() - self._wait_asked < WAIT_ASK_EVERY_S
        ):
            return w
        try:
            self._rm = self._rm or rm_client(self.info)
            diagnostics = (self._app or {}).get("diagnostics", "") if accepted else ""
            w = waiting.queue_wait(
                self._rm,
                spec.get("queue") or (self._app or {}).get("queue", "default"),
                since,
                who,
                asked,
                label,
                self.info.app_id,
                diagnostics,
            )
        except BackendError:
            return self._wait  # the RM did not answer: the last figures, if any
        self._wait, self._wait_asked = w, time.time()
        return w

    def _answered(self, snap: JobSnapshot) -> None:
        if snap.settled:
            self._save_final(snap)

    def _save_final(self, snap: JobSnapshot) -> None:
        """Keep the AM's final status, events, logs and result in the local record, where the
        disk fallbacks read them."""
        d = self.record.layout
        if d.status.exists():
            return
        got = self.call_am("GET", "events", params={"since": 0})
        if got is None:
            return
        with open(d.events, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(e) + "\n" for e in got["events"])
        for attempt in range(1, (snap.attempt or 0) + 1):
            for t in snap.tasks:
                logs = self.call_am("GET", "logs", params={"task": t.id, "attempt": attempt})
                if logs and logs["text"]:
                    path = d.log(attempt, t.id)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(logs["text"])
        result = self.call_am("GET", "result")
        if result and result.get("result"):
            d.result.write_text(json.dumps(result["result"]))
        # last, whole or not at all: it marks the copy complete
        tmp = d.path / f".{jobdir.STATUS}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(snap.to_json()))
        os.replace(tmp, d.status)

    def _kill_without_am(self) -> bool:
        if self.record.layout.status.exists():
            return False
        kill(self.info)  # no AM to ask (not started yet, or gone): YARN kills it
        return True

    def release(self) -> None:
        # Keep the AM's final record before it goes: wait (bounded) until it has stopped
        # every task, then copy it; snapshot() saves it once it is settled.
        deadline = time.monotonic() + 20
        while not (snap := self.snapshot()).settled and time.monotonic() < deadline:
            if snap.state not in (JobState.SUCCEEDED, JobState.FAILED, JobState.KILLED):
                break
            time.sleep(0.1)
        super().release()

    def wait_am_exit(self, timeout: float = 15) -> bool:
        return wait_end(self.info, timeout)
