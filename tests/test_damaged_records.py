"""No damaged record breaks a command: a seeded fuzzer damages each file of two real jobs'
records (one succeeded, one failed) in every way a disk or a dying process does, and checks
that list, status, logs, attach, kill and the server extension's list and detail (what its
compare reads too) never crash: a damaged entry is listed with its reason and what to do, the
other job reads as before. The YARN module does the same to the history entries on HDFS."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import threading
import time
import traceback
from pathlib import Path

import pytest
from helpers.damage import Damage, cases
from helpers.jobs import FAST, submit
from tornado import web

from tony_jupyter import commands
from tony_jupyter.am.coordinator import Coordinator
from tony_jupyter.am.provider import Placement, Provider
from tony_jupyter.am.yarn import eventlog
from tony_jupyter.core.errors import TonyError
from tony_jupyter.core.protocol import TERMINAL_JOB_STATES, JobSnapshot
from tony_jupyter.core.spec import JobSpec
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher.joblist import all_jobs, open_job
from tony_jupyter.server_ext.detail import job_detail
from tony_jupyter.server_ext.jobs import ServerJobs
from tony_jupyter.widgets import JobView, follow

SEED = 30
BUDGET_S = 120  # the whole fuzz, whatever the machine: cases past it are counted as not run
OK_CELL = 'print("the healthy one", flush=True)\n6 * 7\n'
FAILED_CELL = 'print("the broken one", flush=True)\nraise ValueError("on purpose")\n'


def run_job(line: str, source: str) -> str:
    client = submit(f"{line} {FAST}", source, {})
    TonyJob(client.record).wait(120)
    client.release()
    assert client.wait_am_exit(30)
    return client.job_id


def record_files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def damage(d: Path, case: Damage) -> None:
    target = d / case.path
    original = target.read_bytes()
    if case.kind in ("missing", "directory"):
        target.unlink()
        if case.kind == "directory":
            target.mkdir()
            (target / "stray").write_text("x")
    elif case.kind == "unreadable":
        target.chmod(0)
    else:
        content = case.content(original)
        assert content is not None
        target.write_bytes(content)


def survives(what: str, fn, *args):
    """``fn(*args)``; a TonyError (a worded answer) is surviving, anything else is not."""
    try:
        return fn(*args)
    except TonyError as e:
        assert str(e).strip(), f"{what}: an error without a message"
        return e
    except web.HTTPError as e:  # the server's worded answer (404: not a job)
        assert e.status_code < 500, f"{what}: {e}"
        return e


def attach(job_id: str):
    job = TonyJob(open_job(job_id))
    stop = threading.Event()
    threading.Timer(5, stop.set).start()  # a job that looks running: stop following it
    return follow(job.client, JobView(job_id), stop=stop, poll_s=0.1)


def server_views(home: Path, job_id: str) -> list[dict]:
    jobs = ServerJobs(jobs_home=str(home), threads=2)
    try:
        rows = asyncio.run(jobs.summaries())
        detail = survives("detail", lambda: job_detail(jobs.client(job_id)).to_json())
        if isinstance(detail, dict) and detail["damaged"]:
            assert "remove" in detail["damaged"], detail["damaged"]
        return rows
    finally:
        jobs.pool.shutdown()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Two real local jobs' records (run once for the module), kept as they were left."""
    home = tmp_path_factory.mktemp("records") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TONY_JUPYTER_HOME", str(home))
        mp.delenv("HADOOP_CONF_DIR", raising=False)
        ok = run_job("--name healthy", OK_CELL)
        failed = run_job("--name broken", FAILED_CELL)
    return home, ok, failed


def check_case(
    home: Path, victim: str, other: str, other_state: str, case: Damage, state_file="status.json"
) -> None:
    """Every reader survives; ``state_file``: where the listing reads the victim's state."""
    row = next(r for r in all_jobs().rows if r["job_id"] == victim)
    if row["state"] == "UNKNOWN" or (case.path == state_file and case.kind != "unreadable"):
        # the entry's state could not be read: the listing says why and what to do
        reason = row["reason"]
        assert "damaged" in reason and state_file in reason and "remove" in reason, row
        assert f"{victim}: {reason}" in commands.list_text()
    listed = commands.list_text()
    line = next((x for x in listed.splitlines() if x.startswith(other)), "")
    assert other_state in line, f"the other job's row: {line!r}\n{listed}"
    assert victim in listed, f"the damaged job is not listed:\n{listed}"
    assert "the healthy one" in commands.logs_text(other, "worker:0") or other_state != "SUCCEEDED"
    for what, fn in (
        ("status", commands.status_text),
        ("logs", commands.logs_text),
        ("attach", attach),
        ("kill", commands.kill_text),
    ):
        survives(what, fn, victim)
    rows = server_views(home, victim)
    assert {other, victim} <= {r["job_id"] for r in rows}


def test_no_damaged_file_of_a_local_job_breaks_a_command(pristine, tmp_path, monkeypatch):
    src, ok, failed = pristine
    home = tmp_path / "home"
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(home))
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    todo = [(ok, failed, "FAILED", c) for c in cases(record_files(src / "jobs" / ok), SEED)]
    todo += [(failed, ok, "SUCCEEDED", c) for c in cases(record_files(src / "jobs" / failed), SEED)]
    assert len(todo) >= 200, len(todo)
    deadline = time.monotonic() + BUDGET_S
    broken, tried = [], 0
    for victim, other, other_state, case in todo:
        if time.monotonic() > deadline:
            break
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(src, home)
        damage(home / "jobs" / victim, case)
        tried += 1
        try:
            check_case(home, victim, other, other_state, case)
        except Exception:  # noqa: BLE001 - every case is tried; all failures are shown
            broken.append(f"{victim} {case}:\n{traceback.format_exc(limit=-4)}")
    print(f"damaged-record fuzz: {tried} of {len(todo)} cases tried, {tried - len(broken)} passed")
    assert not broken, f"{len(broken)} of {tried} cases broke a command:\n" + "\n".join(broken[:8])
    assert tried == len(todo), f"only {tried} of {len(todo)} cases in {BUDGET_S} s"


class _Provider(Provider):
    def launch(self, task, task_id, attempt, env):
        pass

    def placement(self, task_id, attempt):
        return Placement("127.0.0.1")

    def stop_task(self, task_id, attempt):
        pass

    def shutdown(self):
        pass


def test_a_new_am_recovers_from_a_damaged_event_log(pristine, tmp_path):
    """The AM's recovery (a new YARN AM attempt) from a real job's event log, with a log batch
    as the lost AM kept it, damaged at random bytes, with garbage and foreign records: it
    takes over what is whole and starts the next attempt."""
    src, _, failed = pristine
    events = (src / "jobs" / failed / "events.jsonl").read_bytes()
    log = {"seq": 99, "time": 1.0, "kind": "log", "task": "worker:0", "attempt": 1, "text": "x\n"}
    whole = events + json.dumps(log).encode() + b"\n"
    rnd = random.Random(SEED)
    for n in range(200):
        lines = whole.splitlines(keepends=True)
        how = n % 4
        if how == 0:  # torn at a byte
            damage_lines = whole[: rnd.randrange(len(whole))]
        elif how == 1:  # a line of garbage
            lines.insert(rnd.randrange(len(lines)), bytes(rnd.randrange(256) for _ in range(40)))
            damage_lines = b"".join(lines)
        else:  # records of another shape
            i = rnd.randrange(len(lines))
            record = json.loads(lines[i])
            key = rnd.choice(sorted(record))
            record[key] = rnd.choice([None, [], {"k": 1}, "x", -1, True])
            lines[i] = json.dumps(record).encode() + b"\n"
            damage_lines = b"".join(lines)
        d = tmp_path / f"am-{n}"
        d.mkdir()
        spec = JobSpec.from_json((src / "jobs" / failed / "spec.json").read_text())
        c = Coordinator(failed, spec, d, _Provider(), {}, clock=lambda: 2.0)
        try:
            c.recover(eventlog.parse(damage_lines))
            c.start()
            assert c.state == "STARTING" or c.state in TERMINAL_JOB_STATES, c.state
            assert JobSnapshot.checked(c.snapshot_json())
        finally:
            c.close()
