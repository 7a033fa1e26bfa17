"""Where jobs live on the notebook host, and the client that talks to a job's AM.

Every job has a directory ``$TONY_JUPYTER_HOME/jobs/<job id>/`` (default ``~/.tony-jupyter``):
the spec, the secret token, and (local backend) the staged bundle, logs and final status.
A job started by a kernel that has since died is found again from here.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import psutil
import requests

from ..errors import BackendError, JobNotFoundError


def home() -> Path:
    return Path(os.environ.get("TONY_JUPYTER_HOME") or Path.home() / ".tony-jupyter")


def jobs_dir() -> Path:
    d = home() / "jobs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def new_job_id() -> str:
    return time.strftime("tony_%Y%m%d_%H%M%S_") + secrets.token_hex(3)


@dataclass(frozen=True)
class JobRecord:
    id: str
    dir: Path

    def read_json(self, name: str) -> dict | None:
        try:
            return json.loads((self.dir / name).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    @property
    def token(self) -> str:
        return (self.dir / "token").read_text().strip()


def list_jobs() -> list[JobRecord]:
    recs = [JobRecord(p.name, p) for p in jobs_dir().iterdir() if (p / "spec.json").exists()]
    return sorted(recs, key=lambda r: r.id)


def find_job(job_id: str) -> JobRecord:
    exact = jobs_dir() / job_id
    if (exact / "spec.json").exists():
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


def _settled(snap: dict) -> bool:
    """The job has ended and the AM has seen every task's process end."""
    return snap["state"] in ("SUCCEEDED", "FAILED", "KILLED") and all(
        t["state"] in ("SUCCEEDED", "FAILED", "KILLED", "STOPPED") for t in snap.get("tasks", [])
    )


def decode_result(payload: dict | None) -> dict | None:
    """The chief's outcome as the executor sent it -> {'value', 'pulled', 'missing'}."""
    if not payload or "value" not in payload:
        return None
    got = cloudpickle.loads(base64.b64decode(payload["value"]))
    if payload.get("arrow"):
        from ..tables import from_ipc

        got["pulled"].update(
            {n: from_ipc(base64.b64decode(b)) for n, b in payload["arrow"].items()}
        )
    return got


class JobClient:
    """Talks to the job's AM while it runs; reads what it left on disk once it is gone."""

    def __init__(self, record: JobRecord):
        self.record = record
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {record.token}"
        self.yarn = record.read_json("yarn.json")  # None for a local job
        self._yarn_url: str | None = None
        self._yarn_app: dict | None = None

    @property
    def job_id(self) -> str:
        return self.record.id

    def am_url(self) -> str | None:
        if self.yarn is not None:
            return self._yarn_am_url()
        info = self.record.read_json("am.json")
        if info and pid_alive(int(info.get("pid", 0))):
            return str(info["url"])
        return None

    def _yarn_am_url(self) -> str | None:
        """A YARN AM is found through the RM's app report (it registers its HTTP address);
        once the app has ended, or the final status is saved here, the RM is not asked again."""
        from .yarn import client as yarn

        if self._yarn_url is None and not (self.record.dir / "status.json").exists():
            if not yarn.ended(self._yarn_app):
                self._yarn_app = yarn.app_report(self.yarn)
                self._yarn_url = yarn.am_url(self._yarn_app)
        return self._yarn_url

    def _call(self, method: str, path: str, timeout: float = 10, **kw) -> dict | None:
        url = self.am_url()
        if url is None:
            return None
        try:
            r = self.session.request(method, f"{url}/api/v1/{path}", timeout=timeout, **kw)
        except requests.ConnectionError:
            self._yarn_url = None
            return None  # the AM just exited; the caller falls back to disk
        if r.status_code >= 400:
            raise BackendError(f"AM of {self.job_id} answered {r.status_code}: {r.text[:300]}")
        return r.json()

    def snapshot(self) -> dict:
        snap = self._call("GET", "job")
        if snap is not None:
            if self.yarn is not None and _settled(snap):
                self._save_final(snap)
            return snap
        snap = self.record.read_json("status.json")
        if snap is not None:
            return snap
        spec = self.record.read_json("spec.json") or {}
        if self.yarn is not None:
            from .yarn import client as yarn

            return yarn.lost_snapshot(self.yarn, spec, self._yarn_app or yarn.app_report(self.yarn))
        return {
            "job_id": self.job_id,
            "name": spec.get("name", ""),
            "state": "LOST",
            "reason": "the AM is gone and left no final status (killed, or its host died)",
            "attempt": 0,
            "max_attempts": spec.get("max_attempts", 1),
            "attempts": [],
            "tasks": [],
            "started": None,
            "finished": None,
            "now": time.time(),
            "endpoints": {},
            "backend": spec.get("backend", "local"),
        }

    def events(self, since: int, timeout: float = 0) -> tuple[list[dict], int]:
        got = self._call(
            "GET", "events", timeout=timeout + 10, params={"since": since, "timeout": timeout}
        )
        if got is None:
            lines = (
                (self.record.dir / "events.jsonl").read_text().splitlines()
                if (self.record.dir / "events.jsonl").exists()
                else []
            )
            events = [json.loads(x) for x in lines[since:]]
            return events, since + len(events)
        return got["events"], got["next"]

    def logs(self, task: str, offset: int = 0, attempt: int = 0) -> tuple[str, int]:
        got = self._call("GET", "logs", params={"task": task, "offset": offset, "attempt": attempt})
        if got is not None:
            return got["text"], got["offset"]
        if not attempt:
            attempt = int(self.snapshot().get("attempt") or 1)
        path = self.record.dir / "logs" / f"attempt-{attempt}" / (task.replace(":", "-") + ".log")
        if not path.exists():
            return "", offset
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
        return data.decode("utf-8", errors="replace"), offset + len(data)

    def result(self) -> dict | None:
        """{'value': ..., 'pulled': {...}, 'missing': [...]} from the chief, or None."""
        got = self._call("GET", "result")
        return decode_result(got.get("result") if got else self.record.read_json("result.json"))

    def _save_final(self, snap: dict) -> None:
        """A YARN AM's files vanish with its container: keep its final status, events, logs
        and result in the local record, where the disk fallbacks above read them."""
        d = self.record.dir
        if (d / "status.json").exists():
            return
        got = self._call("GET", "events", params={"since": 0})
        if got is None:
            return
        with open(d / "events.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(e) + "\n" for e in got["events"])
        for attempt in range(1, int(snap.get("attempt") or 0) + 1):
            for t in snap.get("tasks", []):
                logs = self._call("GET", "logs", params={"task": t["id"], "attempt": attempt})
                if logs and logs["text"]:
                    path = d / "logs" / f"attempt-{attempt}" / (t["id"].replace(":", "-") + ".log")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(logs["text"])
        result = self._call("GET", "result")
        if result and result.get("result"):
            (d / "result.json").write_text(json.dumps(result["result"]))
        (d / "status.json").write_text(json.dumps(snap))  # last: it marks the copy complete

    def kill(self, reason: str = "killed on request") -> bool:
        if self._call("POST", "kill", json={"reason": reason}) is not None:
            return True
        if self.yarn is not None and not (self.record.dir / "status.json").exists():
            from .yarn import client as yarn

            yarn.kill(self.yarn)  # no AM to ask (not started yet, or gone): YARN kills it
            return True
        return False

    def release(self) -> None:
        if self.yarn is not None:
            # Keep the AM's final record before it goes: wait (bounded) until it has stopped
            # every task, then copy it; snapshot() saves it once it is settled.
            deadline = time.monotonic() + 20
            while not _settled(snap := self.snapshot()) and time.monotonic() < deadline:
                if snap["state"] not in ("SUCCEEDED", "FAILED", "KILLED"):
                    break
                time.sleep(0.1)
        try:
            self._call("POST", "release", timeout=2)
        except BackendError:
            pass

    def am_pid(self) -> int:
        try:
            return int((self.record.dir / "am.pid").read_text())
        except (FileNotFoundError, ValueError):
            return 0

    def wait_am_exit(self, timeout: float = 15) -> bool:
        if self.yarn is not None:
            from .yarn import client as yarn

            return yarn.wait_end(self.yarn, timeout)
        pid = self.am_pid()
        deadline = time.monotonic() + timeout
        while pid and pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not (pid and pid_alive(pid))
