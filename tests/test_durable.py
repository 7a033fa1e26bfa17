"""Durable before reported: a job is reported ended (result(), `list`, its snapshot) only once
its history entry is complete where it is kept; right after ``result()`` returns, another
process lists it and reads its logs. The YARN module re-runs this with another home."""

import json
import os
import subprocess
import sys

import pytest
from helpers.jobs import FAST

from tony_jupyter.core.protocol import JobSnapshot, JobState
from tony_jupyter.launcher.client import list_jobs

CELL = """
print("kept before reported", flush=True)
7 * 6
"""


@pytest.fixture
def reader_env(tony_home):
    """The environment of the process that reads the job back: here the same home (a local
    job's directory is its history entry); the YARN module gives it another, empty one."""
    return dict(os.environ)


@pytest.fixture
def kept_entry():
    """The job's history.json where it is kept: locally, in its directory."""
    return lambda rec: json.loads((rec.dir / "history.json").read_text())


def cli(env: dict, *args: str) -> str:
    got = subprocess.run(
        [sys.executable, "-m", "tony_jupyter.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_an_ended_job_is_listed_and_its_logs_read_from_another_process_at_once(
    shell, tony_home, reader_env, kept_entry
):
    value = shell.run_cell_magic("tony", f"--name durable {FAST}", CELL)  # via result()
    assert value == 42
    (rec,) = list_jobs()
    assert kept_entry(rec)["summary"]["state"] == "SUCCEEDED"  # before the AM is gone
    listed = cli(reader_env, "list")
    row = next(line for line in listed.splitlines() if line.startswith(rec.id))
    assert "SUCCEEDED" in row and "durable" in row, listed
    assert "kept before reported" in cli(reader_env, "logs", rec.id, "worker:0")


def test_a_job_is_not_reported_ended_while_its_history_is_written():
    pending = JobSnapshot("j", state=JobState.SUCCEEDED, history_pending=True)
    assert not pending.terminal and not pending.settled
    kept = JobSnapshot.from_json({**pending.to_json(), "history_pending": False})
    assert kept.terminal and kept.settled
    older = {k: v for k, v in pending.to_json().items() if k != "history_pending"}
    assert JobSnapshot.from_json(older).terminal  # a status.json from before the field


def test_the_status_file_is_the_entry_as_kept(shell, tony_home):
    shell.run_cell_magic("tony", f"--name durable {FAST}", CELL)
    (rec,) = list_jobs()
    for name in ("history.json", "metrics.json", "status.json"):
        json.loads((rec.dir / name).read_text())  # whole: written and renamed
    assert json.loads((rec.dir / "status.json").read_text())["history_pending"] is False
    assert not list(rec.dir.glob("*.tmp"))
