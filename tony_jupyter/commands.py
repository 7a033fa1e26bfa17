"""list / status / logs / stacks / kill: the same text for ``%tony`` and the ``tony-jupyter``
command."""

from __future__ import annotations

import sys
import time

from .core.errors import SpecError
from .core.protocol import JobSnapshot
from .core.shown import terminal_safe
from .core.waits import snapshot_wait
from .launcher.joblist import all_jobs, open_job
from .launcher.pickclient import open_client


def _elapsed(snap: JobSnapshot) -> str:
    if not snap.started:
        return "-"
    end = snap.finished or snap.now or time.time()
    return f"{end - snap.started:.1f}s"


def _summary_elapsed(row: dict) -> str:
    if not row.get("started"):
        return "-"
    return f"{(row.get('finished') or time.time()) - row['started']:.1f}s"


def list_text() -> str:
    """Every job: this host's records, and with a cluster its HDFS history and RM (WHERE)."""
    listing = all_jobs()
    rows = [("JOB", "NAME", "BACKEND", "STATE", "ATTEMPT", "ELAPSED", "WHERE")]
    for r in sorted(listing.rows, key=lambda r: r["job_id"]):
        attempt = f"{r.get('attempt')}/{r.get('max_attempts')}" if r.get("attempt") else "-"
        where = listing.where.get(r["job_id"], "")
        rows.append(
            (r["job_id"], r["name"], r["backend"], r["state"], attempt, _summary_elapsed(r), where)
        )
    notes = [f"({n})" for n in listing.notes]
    # a damaged entry: what is wrong and what to do, under the table
    notes += [f"{r['job_id']}: {r['reason']}" for r in rows_damaged(listing.rows)]
    if len(rows) == 1:
        return "\n".join(["no jobs yet", *notes])
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([*(line.rstrip() for line in lines), *notes])


def rows_damaged(rows: list[dict]) -> list[dict]:
    return [r for r in rows if str(r.get("reason") or "").startswith("damaged ")]


def status_text(job_id: str) -> str:
    s = open_client(open_job(job_id)).snapshot()
    lines = [
        f"job {s.job_id} ({s.name}, {s.backend}): {s.state}"
        f"  attempt {s.attempt}/{s.max_attempts}  {_elapsed(s)}"
    ]
    if s.reason:
        lines.append(f"reason: {s.reason}")
    if s.stall is not None:
        from .widgets.render import stall_text

        lines.append(stall_text(s) + " (`stacks` shows where each task is)")
    if snapshot_wait(s):
        lines.append(snapshot_wait(s))
    for a in s.attempts:
        lines.append(f"attempt {a.attempt} ended: {a.reason}")
    for t in s.tasks:
        hb = f"{s.now - t.last_heartbeat:.1f}s ago" if t.last_heartbeat else "-"
        where = f"{t.host}:{t.port}" if t.host else "-"
        lines.append(
            f"  {t.id:<12} {t.state:<10} {where:<22} heartbeat {hb}"
            + (f"  exit {t.exit_code}" if t.exit_code is not None else "")
        )
    for name, url in s.endpoints.items():
        lines.append(f"  endpoint {name}: {url}")
    return "\n".join(lines)


def logs_text(job_id: str, task: str | None = None, attempt: int = 0) -> str:
    client = open_client(open_job(job_id))
    snap = client.snapshot()
    known = [t.id for t in snap.tasks]
    tasks = [task] if task else known
    if task and known and task not in known:
        raise SpecError(f"job {job_id} has no task {task!r}; its tasks: {', '.join(sorted(known))}")
    out = []
    for tid in tasks:
        text, _ = client.logs(tid, 0, attempt)
        out.append(f"==> {tid} <==\n{text}" if len(tasks) > 1 else text)
    return "\n".join(out)


def stacks_text(job_id: str, task: str | None = None) -> str:
    """Every running task's Python stacks (all threads), grouped: tasks with the same stacks
    together, the odd ones out marked (stackgroups.py)."""
    return client_stacks_text(open_client(open_job(job_id)), task)


def client_stacks_text(client, task: str | None = None) -> str:
    """:func:`stacks_text` of a job whose client is open (the widget's Stacks button)."""
    from .core.stackgroups import render

    job_id = client.job_id
    snap = client.snapshot()
    known = [t.id for t in snap.tasks]
    if task and known and task not in known:
        raise SpecError(f"job {job_id} has no task {task!r}; its tasks: {', '.join(sorted(known))}")
    if snap.terminal:
        return f"job {job_id} has ended ({snap.state}): no task runs to take stacks of"
    answer = client.stacks(task)
    if answer is None:
        return f"job {job_id}: its AM did not answer (state {snap.state}); try `status`"
    return render(answer, snap.stall.behind if snap.stall else ())


def kill_text(job_id: str) -> str:
    from .job import TonyJob

    job = TonyJob(open_job(job_id))
    before = job.client.snapshot()
    if before.terminal:
        return f"job {job.job_id} already ended: {before.state}"
    snap = job.kill("killed with `tony kill`")
    return f"job {job.job_id}: {snap.state}"


def dispatch(cmd: str, args: list[str]) -> None:
    """Run one of list/status/logs/kill and print its text."""
    need = {"status": 1, "logs": 1, "stacks": 1, "kill": 1}
    if cmd == "doctor":
        from .launcher.doctor import doctor

        show(doctor(args)[0])  # the `tony-jupyter doctor` command exits 1 on a failed check
        return
    if cmd not in ("list", *need):
        raise SpecError(f"unknown command {cmd!r}; try list, status, logs, stacks, kill, doctor")
    if len(args) < need.get(cmd, 0):
        raise SpecError(f"{cmd} needs a job id (see `list`)")
    if cmd == "list":
        show(list_text())
    elif cmd == "status":
        show(status_text(args[0]))
    elif cmd == "logs":
        show(logs_text(args[0], args[1] if len(args) > 1 else None))
    elif cmd == "stacks":
        show(stacks_text(args[0], args[1] if len(args) > 1 else None))
    else:
        show(kill_text(args[0]))


def show(text: str, file=None) -> None:
    """Print text that holds what others wrote (a task's log, a job's name, a server's
    answer): to a terminal or a notebook as text, its control characters replaced and URLs'
    credentials redacted (shown.terminal_safe)."""
    print(terminal_safe(text), file=file or sys.stdout)
