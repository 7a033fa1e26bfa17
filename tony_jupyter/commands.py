"""list / status / logs / kill: the same text for ``%tony`` and the ``tony-jupyter`` command."""

from __future__ import annotations

import time

from .errors import SpecError
from .launcher.client import JobClient, find_job, list_jobs

TERMINAL = ("SUCCEEDED", "FAILED", "KILLED", "LOST")


def _elapsed(snap: dict) -> str:
    start = snap.get("started")
    if not start:
        return "-"
    end = snap.get("finished") or snap.get("now") or time.time()
    return f"{end - start:.1f}s"


def list_text() -> str:
    rows = [("JOB", "NAME", "BACKEND", "STATE", "ATTEMPT", "ELAPSED")]
    for rec in list_jobs():
        s = JobClient(rec).snapshot()
        rows.append(
            (
                rec.id,
                s.get("name", ""),
                s.get("backend", ""),
                s["state"],
                f"{s.get('attempt', 0)}/{s.get('max_attempts', 1)}",
                _elapsed(s),
            )
        )
    if len(rows) == 1:
        return "no jobs yet"
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(line.rstrip() for line in lines)


def status_text(job_id: str) -> str:
    s = JobClient(find_job(job_id)).snapshot()
    lines = [
        f"job {s['job_id']} ({s.get('name', '')}, {s.get('backend', '')}): {s['state']}"
        f"  attempt {s.get('attempt', 0)}/{s.get('max_attempts', 1)}  {_elapsed(s)}"
    ]
    if s.get("reason"):
        lines.append(f"reason: {s['reason']}")
    for a in s.get("attempts", []):
        lines.append(f"attempt {a['attempt']} ended: {a['reason']}")
    for t in s.get("tasks", []):
        hb = f"{s['now'] - t['last_heartbeat']:.1f}s ago" if t.get("last_heartbeat") else "-"
        where = f"{t['host']}:{t['port']}" if t.get("host") else "-"
        lines.append(
            f"  {t['id']:<12} {t['state']:<10} {where:<22} heartbeat {hb}"
            + (f"  exit {t['exit_code']}" if t.get("exit_code") is not None else "")
        )
    for name, url in s.get("endpoints", {}).items():
        lines.append(f"  endpoint {name}: {url}")
    return "\n".join(lines)


def logs_text(job_id: str, task: str | None = None, attempt: int = 0) -> str:
    client = JobClient(find_job(job_id))
    snap = client.snapshot()
    tasks = [task] if task else [t["id"] for t in snap.get("tasks", [])]
    known = {t["id"] for t in snap.get("tasks", [])}
    if task and known and task not in known:
        raise SpecError(f"job {job_id} has no task {task!r}; its tasks: {', '.join(sorted(known))}")
    out = []
    for tid in tasks:
        text, _ = client.logs(tid, 0, attempt)
        out.append(f"==> {tid} <==\n{text}" if len(tasks) > 1 else text)
    return "\n".join(out)


def kill_text(job_id: str) -> str:
    from .job import TonyJob

    job = TonyJob(find_job(job_id))
    before = job.client.snapshot()["state"]
    if before in TERMINAL:
        return f"job {job.job_id} already ended: {before}"
    snap = job.kill("killed with `tony kill`")
    return f"job {job.job_id}: {snap['state']}"


def dispatch(cmd: str, args: list[str]) -> None:
    """Run one of list/status/logs/kill and print its text."""
    need = {"status": 1, "logs": 1, "kill": 1}
    if cmd not in ("list", *need):
        raise SpecError(f"unknown command {cmd!r}; try list, status, logs, kill, attach, run, help")
    if len(args) < need.get(cmd, 0):
        raise SpecError(f"{cmd} needs a job id (see `list`)")
    if cmd == "list":
        print(list_text())
    elif cmd == "status":
        print(status_text(args[0]))
    elif cmd == "logs":
        print(logs_text(args[0], args[1] if len(args) > 1 else None))
    else:
        print(kill_text(args[0]))
