"""Where jobs live on the notebook host, and the client that talks to a job's AM.

Every job has a directory ``$TONY_JUPYTER_HOME/jobs/<job id>/`` (default ``~/.tony-jupyter``):
the spec, the secret token, and (local backend) the staged bundle, logs and final status.
A job started by a kernel that has since died is found again from here.

:class:`JobClient` is what every backend's client shares: the HTTP calls to the AM and the
fallbacks to what the job left on disk. ``launcher.clients.open_client`` picks the backend's
(``LocalJobClient`` in ``launcher.local``, ``YarnJobClient`` in ``launcher.yarn.client``).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import cloudpickle
import psutil
import requests

from ..core import amcall, jobdir
from ..core.errors import BackendError, JobNotFoundError
from ..core.jobdir import JobDir
from ..core.origin import JobOrigin
from ..core.protocol import (
    CellList,
    CellSubmit,
    CellView,
    EndpointAnswer,
    Event,
    EventsAnswer,
    JobSnapshot,
    LogsAnswer,
    ReasonBody,
    ResultAnswer,
    StacksAnswer,
    token_verifier,
)
from ..core.spec import JobSpec
from ..core.yarninfo import YarnInfo
from . import damage
from .damage import DamagedRecordError

HOME_ENV = "TONY_JUPYTER_HOME"  # the notebook side's: where its job records are


def home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".tony-jupyter")


def jobs_dir(root: Path | None = None) -> Path:
    """``<root>/jobs``; ``root`` defaults to :func:`home` (the server extension passes its own)."""
    d = (root or home()) / "jobs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def new_job_id() -> str:
    return time.strftime("tony_%Y%m%d_%H%M%S_") + secrets.token_hex(3)


@dataclass(frozen=True)
class JobRecord:
    id: str
    dir: Path
    # file name -> what is wrong with it (damage.py), as the files are read
    damaged: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def layout(self) -> JobDir:
        """Where each of the job's files is."""
        return JobDir(self.dir)

    def read_json(self, name: str) -> dict | None:
        """The file's JSON object (``name``: one of :mod:`..jobdir`'s); None when it is
        missing, or damaged (then in ``damaged``)."""
        try:
            return damage.read_json(self.dir / name)
        except DamagedRecordError as e:
            self.damaged[name] = e.why
            return None

    def note_damage(self, name: str, why: str) -> None:
        self.damaged[name] = why

    def damage_note(self) -> str:
        """What is damaged in the record, and what the user can do; "" when nothing is."""
        if not self.damaged:
            return ""
        what = "; ".join(f"{n} {why}" for n, why in sorted(self.damaged.items()))
        return f"damaged record: {what}; {damage.advice(self.dir)}"

    @classmethod
    def create(
        cls, job_id: str, token: str, root: Path | None = None, token_in_dir: bool = False
    ) -> JobRecord:
        """A new job's directory (mode 700) and its token (600), the one place both backends
        make them: a local job's token in ``<home>/tokens`` with its verifier in the directory
        (its tasks run there); a YARN job's record (no task runs there) keeps the token in it.
        Nothing is left when this fails. The spec goes last, by :meth:`write_spec`."""
        d = jobs_dir(root) / job_id
        d.mkdir(mode=0o700)
        record = cls(job_id, d)
        try:
            if token_in_dir:
                record.layout.token.touch(mode=0o600)
                record.layout.token.write_text(token)
            else:
                record.write_token(token)
        except BaseException:
            record.remove()
            raise
        return record

    def write_spec(self, spec: JobSpec) -> None:
        """The job's spec, written last: its presence is what makes the directory a job
        (``is_job_dir``, ``list_jobs``)."""
        self.layout.spec.write_text(spec.to_json())

    def yarn(self) -> YarnInfo | None:
        """A YARN job's yarn.json; None for a local job, or when it is damaged (then in
        ``damaged``)."""
        data = self.read_json(jobdir.YARN_INFO)
        if data is None:
            return None
        try:
            return YarnInfo.checked(data)
        except ValueError as e:
            self.damaged[jobdir.YARN_INFO] = str(e)
            return None

    def origin(self) -> JobOrigin | None:
        """Where the job was submitted from (origin.json); None when it was not recorded (a
        job of an older version, a script's, one adopted from elsewhere) or is damaged (then
        in ``damaged``)."""
        data = self.read_json(jobdir.ORIGIN)
        if data is None:
            return None
        try:
            got = JobOrigin.checked(data)
            got.bound()
            return got
        except ValueError as e:
            self.damaged[jobdir.ORIGIN] = str(e)
            return None

    def write_origin(self, origin: JobOrigin) -> None:
        """origin.json, whole or not at all (a server reads it while the job runs)."""
        origin.write(self.layout.origin)

    @property
    def token_path(self) -> Path:
        """Where the job's token is: in ``<home>/tokens``, out of the job's directory (a local
        job's tasks run in it); a YARN job's record (no task runs there) and an older local
        job keep it in the job's directory."""
        kept = token_store(self.dir.parent) / self.id
        return kept if kept.exists() else self.layout.token

    @property
    def token(self) -> str:
        try:
            raw = damage.read_bytes(self.token_path)
        except DamagedRecordError as e:
            self.damaged[jobdir.TOKEN], raw = e.why, None
        return (raw or b"").decode("ascii", errors="replace").strip()

    def write_token(self, token: str) -> None:
        """The token into :func:`token_store` (readable by the user only), its verifier into
        the job's directory (what the AM is given)."""
        path = token_store(self.dir.parent) / self.id
        path.touch(mode=0o600)
        path.write_text(token)
        self.layout.token_verifier.write_text(token_verifier(token))

    def remove(self) -> None:
        """The job's directory and its token."""
        shutil.rmtree(self.dir, ignore_errors=True)
        (token_store(self.dir.parent) / self.id).unlink(missing_ok=True)


def token_store(jobs: Path) -> Path:
    """``<home>/tokens``, beside ``jobs``: the local jobs' tokens, where no task's working
    directory is."""
    d = jobs.parent / "tokens"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


def is_job_dir(d: Path) -> bool:
    """A job's directory (JobDir.holds_job), not one being copied here (history.adopt)."""
    return not d.name.startswith(".") and JobDir(d).holds_job()


def list_jobs(root: Path | None = None) -> list[JobRecord]:
    recs = [JobRecord(p.name, p) for p in jobs_dir(root).iterdir() if is_job_dir(p)]
    return sorted(recs, key=lambda r: r.id)


def find_job(job_id: str) -> JobRecord:
    exact = jobs_dir() / job_id
    if is_job_dir(exact):
        return JobRecord(job_id, exact)
    matches = [r for r in list_jobs() if job_id in r.id]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise JobNotFoundError(f"no job {job_id!r}; `%tony list` shows the jobs there are")
    raise JobNotFoundError(f"{job_id!r} matches {len(matches)} jobs; give more of the id")


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def decode_result(payload: dict | None) -> dict | None:
    """The chief's outcome as the executor sent it -> {'value', 'pulled', 'missing'}."""
    if not payload or "value" not in payload:
        return None
    got = cloudpickle.loads(base64.b64decode(payload["value"]))
    if payload.get("arrow"):
        from ..core.tables import from_ipc

        got["pulled"].update(
            {n: from_ipc(base64.b64decode(b)) for n, b in payload["arrow"].items()}
        )
    return got


class JobClient(ABC):
    """Talks to the job's AM while it runs; reads what it left on disk once it is gone."""

    def __init__(self, record: JobRecord):
        self.record = record
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {record.token}"

    @property
    def job_id(self) -> str:
        return self.record.id

    # --- what a backend supplies ----------------------------------------------------------

    @abstractmethod
    def am_url(self) -> str | None:
        """The AM's base URL while it serves, else None."""

    @abstractmethod
    def lost_snapshot(self, spec: dict) -> JobSnapshot:
        """The job as the backend can tell it with no AM to ask and no final status saved."""

    @abstractmethod
    def wait_am_exit(self, timeout: float = 15) -> bool:
        """Wait until the AM has exited; False if it is still there after ``timeout``."""

    # Optional hooks: doing nothing is right for a backend whose AM leaves its files here.

    def _am_unreachable(self) -> None:  # noqa: B027
        """The AM did not answer: forget where it was."""

    def _answered(self, snap: JobSnapshot) -> None:  # noqa: B027
        """The AM answered ``snap``: a backend may keep what it needs of it."""

    def _kill_without_am(self) -> bool:
        """Kill the job without its AM (not started yet, or gone); False if nothing to do."""
        return False

    # --- the AM's API, with the disk as fallback ------------------------------------------

    def call_am(
        self, method: str, path: str, timeout: float = 10, none_on_404: bool = False, **kw: Any
    ) -> Any:
        """``/api/v1/<path>`` on the AM: its JSON answer, or None when no AM answers (or, with
        ``none_on_404``, when it answers 404)."""
        url = self.am_url()
        if url is None:
            return None

        # A GET is tried twice (amcall.call): the AM closes a connection on which it refused a
        # request without reading its body, and a kept-alive connection may be that one; and
        # an AM has been seen to answer a GET once with a bare 500 and nothing in its log.
        def exchange() -> tuple[int, requests.Response]:
            r = self.session.request(method, f"{url}/api/v1/{path}", timeout=timeout, **kw)
            return r.status_code, r

        try:
            status, r = amcall.call(
                exchange, method=method, lost=(requests.ConnectionError,), retry_status=(500,)
            )
        except amcall.Unanswered:
            self._am_unreachable()
            return None  # the AM just exited; the caller falls back to disk
        if status == 404 and none_on_404:
            return None
        try:
            amcall.check(status, r.text[:300])
        except (amcall.Refused, amcall.Stale):
            raise BackendError(f"AM of {self.job_id} answered {status}: {r.text[:300]}") from None
        return r.json()

    def snapshot(self) -> JobSnapshot:
        got = self.call_am("GET", "job")
        if got is not None:
            snap = JobSnapshot.from_json(got)
            self._answered(snap)
            return snap
        rec = self.record
        saved = rec.read_json(jobdir.STATUS)
        if saved is not None:
            try:
                return JobSnapshot.checked(saved)
            except ValueError as e:
                rec.note_damage(jobdir.STATUS, f"is not a job's status ({e})")
        elif rec.layout.history.is_file():  # the AM kept the history: status was there
            rec.note_damage(jobdir.STATUS, "is missing")
        spec = rec.read_json(jobdir.SPEC) or {}
        try:
            snap = JobSnapshot.checked(self.lost_snapshot(spec).to_json())
        except ValueError as e:
            rec.note_damage(jobdir.SPEC, f"is not a job's spec ({e})")
            snap = self.lost_snapshot({})
        return replace(snap, reason=rec.damage_note()) if rec.damaged else snap

    def endpoint(self, name: str) -> EndpointAnswer | None:
        """Where the job's endpoint ``name`` is and the key its guard takes (TensorBoard's;
        None for an endpoint without one). None when the job has no such endpoint, has ended
        (its ports are free for anyone to listen on) or its AM is gone."""
        got = self.call_am("GET", f"endpoints/{name}", none_on_404=True)
        return None if got is None else EndpointAnswer.from_json(got)

    def events(self, since: int, timeout: float = 0) -> tuple[list[Event], int]:
        """The job's events from the ``since``-th on, and the index of the next: the AM's, or
        once it is gone those it kept beside the job (up to the first that is not one)."""
        got = self.call_am(
            "GET", "events", timeout=timeout + 10, params={"since": since, "timeout": timeout}
        )
        if got is not None:
            answer = EventsAnswer.from_json(got)
            return list(answer.events), answer.next
        events: list[Event] = []
        try:
            for line in damage.read_lines(self.record.layout.events)[since:]:
                events.append(Event.from_json(line))
        except DamagedRecordError as e:
            self.record.note_damage(jobdir.EVENTS, e.why)
            events = []
        except (KeyError, TypeError, ValueError) as e:
            self.record.note_damage(jobdir.EVENTS, f"holds a line that is not an event ({e})")
        return events, since + len(events)

    def feed(
        self, since: int, version: int, attempt: int, offsets: dict[str, int], timeout: float = 0
    ) -> dict | None:
        """The AM's ``feed`` (am/feed.py): once the job changed after ``version``, its snapshot,
        events after ``since`` and each task's log past ``offsets``; None with no AM to ask."""
        params = {
            "since": since,
            "version": version,
            "attempt": attempt,
            "offsets": ",".join(f"{t}={o}" for t, o in offsets.items()),
            "timeout": timeout,
        }
        return self.call_am("GET", "feed", timeout=timeout + 10, none_on_404=True, params=params)

    def logs(self, task: str, offset: int = 0, attempt: int = 0) -> tuple[str, int]:
        got = self.call_am(
            "GET", "logs", params={"task": task, "offset": offset, "attempt": attempt}
        )
        if got is not None:
            answer = LogsAnswer.from_json(got)
            return answer.text, answer.offset
        if not attempt:
            attempt = self.snapshot().attempt or 1
        data = damage.read_from(self.record.layout.log(attempt, task), offset)
        return data.decode("utf-8", errors="replace"), offset + len(data)

    def result(self) -> dict | None:
        """{'value': ..., 'pulled': {...}, 'missing': [...]} from the chief, or None."""
        got = self.call_am("GET", "result")
        if got:
            return decode_result(ResultAnswer.from_json(got).result)
        saved = self.record.read_json(jobdir.RESULT)
        try:
            return decode_result(saved)
        except Exception as e:  # noqa: BLE001 - whatever a damaged pickle raises
            why = f"holds no result that can be read ({e!r:.80})"
            raise DamagedRecordError(self.record.layout.result, why) from None

    def stacks(self, task: str | None = None, timeout: float = 10) -> StacksAnswer | None:
        """Every running task's Python stacks, all threads (``task``: that one's), as the
        tasks' sidecars dump them (``GET stacks``); None when no AM answers."""
        params: dict[str, Any] = {"timeout": timeout}
        if task is not None:
            params["task"] = task
        got = self.call_am("GET", "stacks", timeout=timeout + 10, params=params)
        return None if got is None else StacksAnswer.from_json(got)

    def kill(self, reason: str = "killed on request") -> bool:
        if self.call_am("POST", "kill", json=ReasonBody(reason).to_json()) is not None:
            return True
        return self._kill_without_am()

    def release(self) -> None:
        try:
            self.call_am("POST", "release", timeout=2)
        except BackendError:
            pass

    # --- a session's cells ------------------------------------------------------------------

    def submit_cell(
        self, source: str, names: bytes, pull: list[str], filename: str
    ) -> CellView | None:
        """Queue a cell on the session's tasks: the cell as the AM keeps it, or None (no AM)."""
        body = CellSubmit(source, base64.b64encode(names).decode(), tuple(pull), filename)
        got = self.call_am("POST", "cells", json=body.to_json())
        return None if got is None else CellView.from_json(got)

    def cell(
        self, cell_id: int, timeout: float = 0.0, feed: dict[str, int] | None = None
    ) -> CellView | None:
        """The cell, once it changed or after ``timeout`` s; None when the AM is gone. With
        ``feed`` (task -> log offset read so far), also ``job`` (the snapshot) and ``logs``
        (task -> {text, offset}: the cell's output from there on)."""
        params: dict[str, Any] = {"timeout": timeout}
        if feed is not None:
            params["feed"] = json.dumps(feed)
        got = self.call_am("GET", f"cells/{cell_id}", timeout=timeout + 10, params=params)
        return None if got is None else CellView.from_json(got)

    def cells(self) -> list[CellView]:
        return list(CellList.from_json(self.call_am("GET", "cells") or {}).cells)

    def interrupt_cell(self, cell_id: int) -> None:
        self.call_am("POST", f"cells/{cell_id}/interrupt")

    def stop_session(self, reason: str) -> None:
        self.call_am("POST", "stop", json=ReasonBody(reason).to_json())
