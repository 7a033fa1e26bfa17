"""Heartbeats on the AM's kept-open stream (am/beats.py): the executors' sidecars move onto it,
it takes a task's own token only, records every heartbeat of a live attempt, and tells a stale
one to stop, as ``POST executor/heartbeat`` does."""

import time

import psutil
import pytest
import requests
from helpers.jobs import wait_no_processes
from helpers.tokens import PRINT_OWN_TOKEN, own_token

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import Beat, HeartbeatAnswer
from tony_jupyter.executor.link import AMLink, BeatStream, Stale
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args


@pytest.fixture
def running_job(tony_home):
    _, spec = parse_job_args(
        "--workers 2 --no-tensorboard --conf tony.task.heartbeat-interval-ms=200"
    )
    bundle = make_bundle(PRINT_OWN_TOKEN + "import time\ntime.sleep(600)", {})
    client = open_client(backend_local.submit(spec, bundle))
    deadline = time.monotonic() + 30
    while client.snapshot().state != "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    yield client
    client.kill()
    client.release()
    assert client.wait_am_exit()
    assert wait_no_processes(tony_home) == []


def link_for(job, task: str = "worker:0", attempt: int = 1) -> AMLink:
    return AMLink(job.am_url(), own_token(job, task), task, attempt)


def beats_port(job) -> int:
    answer = link_for(job).post("executor/heartbeat")
    assert answer["command"] is None
    return answer["beats"]


def test_the_sidecars_beat_on_the_stream(running_job):
    port = beats_port(running_job)
    am = psutil.Process(backend_local.LocalJobClient(running_job.record).am_pid())
    deadline = time.monotonic() + 10
    streams = 0
    while streams < 2 and time.monotonic() < deadline:
        conns = am.net_connections("tcp")
        streams = sum(c.laddr.port == port and c.status == "ESTABLISHED" for c in conns)
        time.sleep(0.1)
    assert streams == 2  # one per task's sidecar


def test_every_heartbeat_on_the_stream_is_recorded(running_job):
    link = link_for(running_job)
    stream = BeatStream(link, beats_port(running_job), link.token, timeout=10)
    try:
        for step in range(1, 201):
            assert stream.beat(Beat({"step": step}, rss=1 << 20)) == HeartbeatAnswer()
    finally:
        stream.close()
    task = next(t for t in running_job.snapshot().tasks if t.id == "worker:0")
    # The task's own sidecar reports no progress (it has none), so only these beats set it.
    assert task.progress == {"step": 200}


def test_the_stream_takes_the_tasks_own_token_only(running_job):
    port = beats_port(running_job)
    link = link_for(running_job)
    for token in (running_job.record.token, own_token(running_job, "worker:1")):
        with pytest.raises(ConnectionRefusedError):
            BeatStream(link, port, token, timeout=10)


def test_a_stale_attempt_is_told_to_stop_on_the_stream(running_job):
    port = beats_port(running_job)
    link = link_for(running_job, attempt=7)
    stream = BeatStream(link, port, link.token, timeout=10)
    with pytest.raises(Stale):
        stream.beat(Beat({"step": 1}))
    # and bad fields are refused, as over HTTP
    link = link_for(running_job)
    stream = BeatStream(link, port, link.token, timeout=10)
    with pytest.raises(ConnectionAbortedError, match="'rss' must be a whole number"):
        stream.beat(Beat(rss="lots"))  # type: ignore[arg-type]
    r = requests.post(
        f"{running_job.am_url()}/api/v1/executor/heartbeat",
        json={"task": "worker:0", "attempt": 1, "rss": "lots"},
        headers={"Authorization": f"Bearer {link.token}"},
        timeout=5,
    )
    assert r.status_code == 400 and "'rss' must be a whole number" in r.json()["error"]
