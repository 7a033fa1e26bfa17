"""``GET /tony/api/jobs/<id>/detail``: the job page's data from a job's history entry, written
by the AM's own writers (am/metrics.py's MetricLog, the Coordinator's event form)."""

import asyncio
import json
import time
from pathlib import Path

import jsonschema
import pytest
import tornado.httpclient
from helpers.jobs import fetch_json
from helpers.server import finished_job

from tony_jupyter.am.metrics import MetricLog
from tony_jupyter.core.protocol import Event, EventKind, GpuUse, Stall, TaskStacks
from tony_jupyter.core.protocol.executor import Resources
from tony_jupyter.server_ext.detail import AttemptSpan, JobDetail

pytest_plugins = ["pytest_jupyter.jupyter_server"]

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "labextension/schema/protocol.schema.json").read_text()
)


def history(home, job_id="tony_20240101_000000_bbbbbb", failed_first=True):
    """A finished two-worker job's entry: attempt 1 failed (worker:1), attempt 2 succeeded."""
    job_id = finished_job(home, job_id)
    d = home / "jobs" / job_id
    (d / "spec.json").write_text(json.dumps({"name": "digits", "max_attempts": 2}))
    events = [(10.0, {"attempt": 1, "state": "STARTED"})]
    if failed_first:
        why = "worker:1 exited with code 1"
        events += [
            (14.0, {"attempt": 1, "state": "FAILED", "reason": why, "task": "worker:1"}),
            (15.0, {"attempt": 2, "state": "STARTED"}),
        ]
    lines = [
        json.dumps(Event(i, t, EventKind.ATTEMPT, data).to_json())
        for i, (t, data) in enumerate(events)
    ]
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")
    log = MetricLog()
    for step in range(1, 6):
        for task in ("worker:0", "worker:1"):
            resources = Resources(cpu_percent=90.0, rss_bytes=1 << 28)
            log.add(2, task, 15.0 + step, {"step": step, "loss": 1.0 / step}, resources)
    (d / "metrics.json").write_text(json.dumps(log.to_json()))
    status = json.loads((d / "status.json").read_text())
    status.update(attempt=2 if failed_first else 1, max_attempts=2, finished=21.0)
    (d / "status.json").write_text(json.dumps(status))
    return job_id


async def test_detail_of_a_finished_job(jp_fetch, tony_home):
    job_id = history(tony_home)
    got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "detail")
    assert got["job"]["job_id"] == job_id and got["job"]["state"] == "SUCCEEDED"
    assert got["spec"] == {"name": "digits", "max_attempts": 2}
    assert got["attempts"] == [
        AttemptSpan(1, 10.0, 14.0, "FAILED", "worker:1 exited with code 1", "worker:1").to_json(),
        AttemptSpan(2, 15.0, 21.0, "SUCCEEDED", "", None).to_json(),
    ]
    series = got["metrics"]["2"]["worker:0"]
    assert [s["step"] for s in series] == [1, 2, 3, 4, 5] and series[-1]["loss"] == 0.2
    assert series[0]["cpu_percent"] == 90.0 and got["history"] is False
    validator = jsonschema.Draft7Validator({**SCHEMA, "$ref": "#/definitions/JobDetail"})
    validator.validate(got)


async def test_detail_of_a_job_without_events_or_metrics(jp_fetch, tony_home):
    job_id = finished_job(tony_home, state="FAILED")
    got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "detail")
    assert got["metrics"] == {} and got["spec"] == {}
    assert got["attempts"] == []  # the record names no attempt: nothing to draw


@pytest.mark.parametrize("job", ["tony_nope", "..", "a.b"])
async def test_detail_of_an_unknown_job_is_404_with_its_name(jp_fetch, tony_home, job):
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("tony", "api", "jobs", job, "detail")
    assert e.value.code == 404
    if job == "tony_nope":
        assert json.loads(e.value.response.body)["message"] == "no job 'tony_nope'"
    assert not (tony_home / "jobs" / job).exists()  # nothing made for it


def test_schema_names_the_detail_records_fields():
    from dataclasses import fields

    for record in (AttemptSpan, JobDetail):
        assert set(SCHEMA["definitions"][record.__name__]["properties"]) == {
            f.name for f in fields(record)
        }


@pytest.mark.usefixtures("backend")
async def test_detail_of_a_running_job_has_its_series_from_the_am(jp_fetch, running_job):
    job_id, got = running_job.job_id, {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the series grow with each heartbeat
        got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "detail")
        if len(got["metrics"].get("1", {}).get("worker:0", [])) >= 2:
            break
        await asyncio.sleep(0.5)
    assert got["job"]["state"] == "RUNNING"
    [span] = got["attempts"]
    assert span["attempt"] == 1 and span["state"] == "RUNNING" and span["finished"] is None
    samples = got["metrics"]["1"]["worker:0"]
    assert len(samples) >= 2 and "rss_bytes" in samples[-1]
    assert got["history"] is False  # written when the job ends


async def test_detail_names_a_stall_its_stacks_grouped_and_idle_gpus(jp_fetch, tony_home):
    job_id = history(tony_home, failed_first=False)
    d = tony_home / "jobs" / job_id
    log = MetricLog()
    for t in range(60):  # two workers' GPUs at 4%: the job waits on its input
        for task in ("worker:0", "worker:1"):
            gpu = GpuUse(0, utilization=4.0, memory_used_mb=1000.0)
            log.add(1, task, 100.0 + t, {"step": 1}, Resources(cpu_percent=300.0, gpus=(gpu,)))
    (d / "metrics.json").write_text(json.dumps(log.to_json()))
    wait = 'Thread 0x1 (most recent call first):\n  File "/c/cell.py", line 3 in {}\n'
    stall = Stall(
        since=150.0, marked=170.0, threshold_s=10.0, behind=("worker:1",),
        steps={"worker:0": "step 6", "worker:1": "step 5"},
        stacks=(
            TaskStacks("worker:0", wait.format("collective"), seconds=0.12),
            TaskStacks("worker:1", wait.format("wait_here"), seconds=0.08),
            TaskStacks("worker:2", wait.format("collective"), seconds=0.1),
        ),
    )  # fmt: skip
    status = json.loads((d / "status.json").read_text())
    status.update(stall=stall.to_json(), now=171.0)
    (d / "status.json").write_text(json.dumps(status))
    got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "detail")
    jsonschema.Draft7Validator({**SCHEMA, "$ref": "#/definitions/JobDetail"}).validate(got)
    assert got["gpu_idle"].startswith("GPUs idle 100% of the last 59 s (2 GPU(s)")
    assert "no task reported a new step for 21.0 s (limit 10.0 s)" in got["stall"]
    assert "furthest behind: worker:1" in got["stall"]
    same, odd = got["stall_stacks"]["groups"]
    assert same["tasks"] == ["worker:0", "worker:2"] and not same["odd"] and not same["behind"]
    assert odd["tasks"] == ["worker:1"] and odd["odd"] and odd["behind"]
    assert odd["threads"] == [{"name": "", "frames": ['File "/c/cell.py", line 3 in wait_here']}]
    assert got["stall_stacks"]["seconds"] == {"worker:0": 0.12, "worker:1": 0.08, "worker:2": 0.1}


async def test_a_busy_unstalled_job_has_no_stall_and_no_idle_line(jp_fetch, tony_home):
    job_id = history(tony_home)  # CPU samples only
    got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "detail")
    assert got["gpu_idle"] == "" and got["stall"] == "" and got["stall_stacks"] is None


async def test_stacks_of_a_running_job_grouped_and_of_an_ended_one_refused(jp_fetch, running_job):
    job_id = running_job.job_id
    got = await fetch_json(jp_fetch, "tony", "api", "jobs", job_id, "stacks")
    jsonschema.Draft7Validator({**SCHEMA, "$ref": "#/definitions/StackGroups"}).validate(got)
    [group] = got["groups"]
    assert group["tasks"] == ["worker:0"] and not group["odd"] and group["error"] is None
    frames = [f for t in group["threads"] for f in t["frames"]]
    assert any(f.endswith("in <module>") for f in frames), frames  # the cell, in its sleep
    assert 0 < got["seconds"]["worker:0"] < 10 and got["missing"] == []
    running_job.kill("test")
    deadline = time.monotonic() + 20
    while not running_job.snapshot().terminal and time.monotonic() < deadline:
        time.sleep(0.1)
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("tony", "api", "jobs", job_id, "stacks")
    assert e.value.code == 409
    assert (
        "has ended (KILLED): no task runs to take stacks of"
        in json.loads(e.value.response.body)["message"]
    )
