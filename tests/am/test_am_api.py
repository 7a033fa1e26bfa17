"""The AM's HTTP API on a real AM process: token auth, job/events/feed/logs/kill."""

import time

import pytest
import requests
from helpers.jobs import wait_no_processes
from helpers.tokens import PRINT_OWN_TOKEN, own_token

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args


@pytest.fixture
def running_job(tony_home):
    # no TensorBoard: its endpoint event would break the "nothing new" long-poll below
    _, spec = parse_job_args(
        "--workers 2 --no-tensorboard --conf tony.task.heartbeat-interval-ms=200"
    )
    cell = PRINT_OWN_TOKEN + "import time\nprint('ready', flush=True)\ntime.sleep(600)"
    bundle = make_bundle(cell, {})
    client = open_client(backend_local.submit(spec, bundle))
    deadline = time.monotonic() + 30
    while client.snapshot().state != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    yield client
    client.kill()
    client.release()
    assert client.wait_am_exit()
    assert wait_no_processes(tony_home) == []


@pytest.mark.parametrize("path", ["job", "events", "feed", "logs?task=worker:0", "result"])
def test_requests_without_or_with_a_wrong_token_are_refused(running_job, path):
    url = f"{running_job.am_url()}/api/v1/{path}"
    assert url.startswith("http://127.0.0.1:")
    assert requests.get(url, timeout=5).status_code == 401
    bad = {"Authorization": "Bearer not-the-token"}
    assert requests.get(url, headers=bad, timeout=5).status_code == 403
    assert running_job.session.get(url, timeout=5).status_code == 200


def test_executor_calls_and_kill_need_the_token_too(running_job):
    base = f"{running_job.am_url()}/api/v1"
    body = {"task": "worker:0", "attempt": 1, "progress": {"step": 1}}
    assert requests.post(f"{base}/executor/heartbeat", json=body, timeout=5).status_code == 401
    assert requests.post(f"{base}/kill", timeout=5).status_code == 401
    assert running_job.snapshot().state == "RUNNING"


def test_events_long_poll_and_logs_from_an_offset(running_job):
    events, nxt = running_job.events(0)
    kinds = [(e.kind, e.data.get("state")) for e in events]
    assert ("job", "RUNNING") in kinds and nxt == len(events)
    start = time.monotonic()
    later, _ = running_job.events(nxt, timeout=1.0)  # nothing new: waits, then returns empty
    assert later == [] and time.monotonic() - start >= 0.9
    deadline = time.monotonic() + 20
    text, offset = "", 0
    while "ready" not in text and time.monotonic() < deadline:
        chunk, offset = running_job.logs("worker:1", offset)
        text += chunk
        time.sleep(0.1)
    assert "ready" in text
    assert running_job.logs("worker:1", offset) == ("", offset)


def test_the_feed_answers_on_a_change_with_the_snapshot_and_new_log_text(running_job):
    first = running_job.feed(0, 0, 0, {})  # version 0: answers at once
    assert first["snapshot"]["state"] == "RUNNING" and first["logs"] == {}
    assert first["next"] == len(first["events"]) > 0
    version, offsets, text = first["version"], {"worker:0": 0, "worker:1": 0}, ""
    deadline = time.monotonic() + 20
    while "ready" not in text and time.monotonic() < deadline:
        got = running_job.feed(first["next"], version, 1, offsets, timeout=5)
        assert got["version"] > version  # it answered a change (a heartbeat, a log batch)
        version = got["version"]
        for task, log in got["logs"].items():
            assert log["offset"] == offsets[task] + len(log["text"].encode())
            offsets[task] = log["offset"]
            text += log["text"] if task == "worker:1" else ""
    assert "ready" in text
    assert running_job.logs("worker:1", offsets["worker:1"]) == ("", offsets["worker:1"])


@pytest.mark.parametrize(
    ("offsets", "status", "message"),
    [
        ("worker:9=0", 404, "no task 'worker:9' in this job"),
        ("../../etc/passwd=0", 404, "no task"),
        ("worker:0=x", 400, "offsets (worker:0) must be a whole number (digits 0-9), not 'x'"),
        ("worker:0=-5", 400, "offsets (worker:0) must be between 0 and"),
        (f"worker:0={10**26}", 400, "must be a whole number (digits 0-9)"),
        ("worker:0=\uff11\uff12", 400, "must be a whole number (digits 0-9)"),
        ("worker:0=1_0", 400, "must be a whole number (digits 0-9)"),
    ],
)
def test_the_feed_refuses_offsets_of_no_task_or_no_number(running_job, offsets, status, message):
    url = f"{running_job.am_url()}/api/v1/feed"
    r = running_job.session.get(url, params={"offsets": offsets}, timeout=5)
    assert r.status_code == status and message in r.text


STALE = {"task": "worker:0", "attempt": 7}


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", "executor/heartbeat", STALE),
        ("POST", "executor/logs", {**STALE, "text": "late\n"}),
        ("POST", "executor/result", {**STALE, "status": "ok"}),
        ("GET", "executor/cluster-spec", None),
    ],
)
def test_a_stale_attempt_is_told_to_stop_on_every_executor_route(running_job, method, path, body):
    own = own_token(running_job)  # executor calls: the task's own token
    params = {"task": "worker:0", "attempt": 7, "timeout": 1} if body is None else None
    r = requests.request(
        method,
        f"{running_job.am_url()}/api/v1/{path}",
        json=body,
        params=params,
        headers={"Authorization": f"Bearer {own}"},
        timeout=5,
    )
    assert r.status_code == 410 and r.json() == {
        "command": "stop",
        "error": "worker:0 attempt 7 is over",
    }
    assert running_job.snapshot().state == "RUNNING"  # the live attempt goes on


def test_kill_ends_the_job_and_the_am_exits_when_released(running_job):
    assert running_job.kill("test kill")
    deadline = time.monotonic() + 15
    while running_job.snapshot().state != "KILLED" and time.monotonic() < deadline:
        time.sleep(0.1)
    snap = running_job.snapshot()
    assert snap.state == "KILLED" and snap.reason == "test kill"
    running_job.release()
    assert running_job.wait_am_exit()
    # Gone, but its final status stays readable from disk.
    final = running_job.snapshot()
    assert final.state == "KILLED"
    assert {t.state for t in final.tasks} == {"STOPPED"}
