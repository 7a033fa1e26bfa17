"""Retention of this host's job records: jobs that ended longer ago than
TONY_JUPYTER_HISTORY_DAYS go, and nothing else does."""

import json
import time
from unittest import mock

from tony_jupyter.core import retention
from tony_jupyter.launcher.client import JobRecord, jobs_dir, list_jobs
from tony_jupyter.launcher.joblist import all_jobs, prune_local

DAY = 86400


def job(home, job_id, state=None, finished=None):
    d = jobs_dir(home) / job_id
    (d / "logs").mkdir(parents=True)
    (d / "spec.json").write_text("{}")
    if state:
        (d / "status.json").write_text(
            json.dumps({"job_id": job_id, "state": state, "finished": finished})
        )
    return d


def test_retention_removes_old_entries_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv(retention.DAYS_ENV, "30")
    now = time.time()
    old = [
        job(tmp_path, "tony_old_ok", "SUCCEEDED", now - 31 * DAY),
        job(tmp_path, "tony_old_failed", "FAILED", now - 400 * DAY),
        job(tmp_path, "tony_old_killed", "KILLED", now - 30.5 * DAY),
    ]
    kept = [
        job(tmp_path, "tony_recent", "SUCCEEDED", now - 29 * DAY),
        job(tmp_path, "tony_running", "RUNNING", None),
        job(tmp_path, "tony_no_status"),  # its age is unknown: kept
    ]
    other = jobs_dir(tmp_path) / "not-a-job"
    other.mkdir()
    (tmp_path / "history").mkdir()
    removed = prune_local(tmp_path, now=now)
    assert sorted(removed) == sorted(d.name for d in old)
    assert all(not d.exists() for d in old)
    assert all(d.exists() for d in kept) and other.exists() and (tmp_path / "history").exists()
    assert {r.id for r in list_jobs(tmp_path)} == {d.name for d in kept}


def test_the_retention_setting(monkeypatch):
    monkeypatch.setenv(retention.DAYS_ENV, "7")
    assert retention.days() == 7
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv(retention.DAYS_ENV, bad)
        assert retention.days() == retention.DEFAULT_DAYS
    monkeypatch.delenv(retention.DAYS_ENV)
    assert retention.days() == 30


def test_an_ended_jobs_summary_is_read_once_and_again_when_its_status_changes(tmp_path):
    now = time.time()
    d = job(tmp_path, "tony_done", "SUCCEEDED", now - 60)
    reads = []
    real = JobRecord.read_json

    def counting(self, name):
        reads.append(name)
        return real(self, name)

    with mock.patch.object(JobRecord, "read_json", counting):
        first = all_jobs(tmp_path, remote=False).rows
        second = all_jobs(tmp_path, remote=False).rows
        assert first == second and first[0]["state"] == "SUCCEEDED"
        assert reads.count("status.json") == 1  # parsed once: listing and retention

        status = json.loads((d / "status.json").read_text())
        (d / "status.json").write_text(json.dumps({**status, "state": "FAILED", "reason": "x"}))
        assert all_jobs(tmp_path, remote=False).rows[0]["state"] == "FAILED"
