"""The AM under hostile or careless input, on a real AM process (127.0.0.1 only): nothing
gets in without the right token, nothing gets out of the job's directory, no input answers
500, and the AM serves its job to the end."""

import json
import random
import socket
import time

import pytest
import requests
from helpers.jobs import running
from helpers.tokens import PRINT_OWN_TOKEN, own_token

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import EndpointAnswer, EventKind
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.options import parse_job_args

CELL = PRINT_OWN_TOKEN + (
    "import os, time\nprint('env', os.environ.get('TONY_TOKEN'), flush=True)\ntime.sleep(600)"
)


@pytest.fixture
def job(tony_home):
    _, spec = parse_job_args("--workers 2 --no-tensorboard")
    with running(
        backend_local.submit(spec, make_bundle(CELL, {})), tony_home, timeout=30
    ) as client:
        yield client


def api(job, path: str) -> str:
    return f"{job.am_url()}/api/v1/{path}"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_logs_read_only_the_jobs_own_task_ids(job, tmp_path):
    secret = tmp_path / "x.log"
    secret.write_text("outside the job")
    for task in (str(secret.with_suffix("")), "../../../../" + str(secret.with_suffix("")), "a:b"):
        r = job.session.get(api(job, "logs"), params={"task": task}, timeout=5)
        assert r.status_code == 404, r.text
        assert "worker:0, worker:1" in r.json()["error"]
    assert job.session.get(api(job, "logs?task=worker:0&attempt=9"), timeout=5).status_code == 404


def test_an_unauthenticated_body_is_refused_before_it_is_read(job):
    host, port = job.am_url().removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(
            b"POST /api/v1/kill HTTP/1.1\r\nHost: x\r\nContent-Length: 94371840\r\n"
            b"Content-Type: application/json\r\n\r\n" + b"x" * 4096
        )
        answer = s.recv(4096)  # the 90 MB never come: the AM answers without waiting for them
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    # Authenticated, a body bigger than the route takes is refused too (not buffered).
    big = {"reason": "x" * (2 << 20)}
    try:
        assert job.session.post(api(job, "kill"), json=big, timeout=10).status_code == 413
    except requests.ConnectionError:
        pass  # or it closed the connection while the body was still coming
    assert job.snapshot().state == "RUNNING"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "kill", [1, 2], 400),
        ("POST", "kill", {"reason": 5}, 400),
        ("POST", "endpoints", {"name": "tb"}, 400),
        ("POST", "endpoints", ["name", "url"], 400),
        ("GET", "events?since=abc", None, 400),
        ("GET", "events?since=-1", None, 400),
        ("GET", "events?timeout=nan", None, 400),
        ("GET", "logs?task=worker:0&offset=-5", None, 400),
        ("GET", "logs?task=worker:0&offset=100000000000000000000", None, 400),
        ("GET", "logs?task=worker:0&attempt=x", None, 400),
        ("GET", "logs?task=worker:0&limit=1e3", None, 400),
        ("GET", "logs?task=worker:0&offset=\uff11\uff12", None, 400),
        ("GET", f"logs?task=worker:0&offset={2**62 + 1}", None, 400),
        ("GET", f"feed?offsets=worker:0={10**26}", None, 400),
        ("GET", "feed?offsets=worker:0=\u0661", None, 400),
        ("GET", "events?since=" + "9" * 5000, None, 400),
    ],
)
def test_malformed_input_is_a_4xx_not_a_500(job, method, path, body, status):
    r = job.session.request(method, api(job, path), json=body, timeout=5)
    assert r.status_code == status, r.text
    assert r.json()["error"]


@pytest.mark.parametrize("offset", [2**62, 2**44, 2**63 // 2 - 1])
def test_a_log_offset_past_its_end_reads_nothing(job, offset):
    r = job.session.get(api(job, "logs"), params={"task": "worker:0", "offset": offset})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "" and r.json()["offset"] == offset
    r = job.session.get(api(job, "feed"), params={"offsets": f"worker:0={offset}"}, timeout=5)
    assert r.status_code == 200, r.text
    assert r.json()["logs"]["worker:0"]["text"] == ""


def test_non_ascii_authorization_is_refused_not_a_500(job):
    r = requests.get(api(job, "job"), headers={"Authorization": "Bearer t\u00f6ken"}, timeout=5)
    assert r.status_code == 403


def test_an_endpoint_is_on_a_host_of_the_jobs_tasks(job):
    for url in ("http://10.255.1.2:80/", "http://example.com:6006/", "file:///etc/passwd", "x"):
        r = job.session.post(api(job, "endpoints"), json={"name": "evil", "url": url}, timeout=5)
        assert r.status_code == 400, (url, r.text)
    assert "evil" not in job.snapshot().endpoints


def test_a_tasks_host_is_where_its_provider_put_it_not_what_it_registers(job):
    worker1 = bearer(own_token(job, "worker:1"))
    # Task code cannot register again (its one-time registration secret is spent and gone
    # from its environment) to claim another host...
    body = {"task": "worker:1", "attempt": 1, "host": "internal-admin.example", "port": 2222,
            "pid": 1, "container": "container_forged"}  # fmt: skip
    r = requests.post(api(job, "executor/register"), json=body, headers=worker1, timeout=5)
    assert r.status_code in (401, 403), r.text
    # ...and the host it registered with is the provider's fact (the local provider's 127.0.0.1)
    task = job.snapshot().task("worker:1")
    assert task.host == "127.0.0.1" and task.port != 2222
    assert task.container != "container_forged"
    # An endpoint is only a port on that host: the claimed host is refused.
    refused = {
        "http://internal-admin.example:80/": "not on the host",
        "http://127.0.0.1:80/admin": "expected http://host:port/",
        "http://127.0.0.1:80/?next=x": "expected http://host:port/",
        "http://u:p@127.0.0.1:80/": "expected http://host:port/",
        "http://127.0.0.1/": "expected http://host:port/",
    }
    for url, message in refused.items():
        body = {"name": "web", "url": url}
        r = requests.post(api(job, "endpoints"), json=body, headers=worker1, timeout=5)
        assert r.status_code == 400 and message in r.json()["error"], (url, r.text)
    assert "web" not in job.snapshot().endpoints


def test_a_task_registers_only_its_own_endpoints_and_only_the_chief_tensorboard(job):
    chief = bearer(own_token(job, "worker:0"))  # worker:0: the chief here
    worker1 = bearer(own_token(job, "worker:1"))
    url = "http://127.0.0.1:6006/"

    def post(headers, name, port):
        body = {"name": name, "url": f"http://127.0.0.1:{port}/"}
        return requests.post(api(job, "endpoints"), json=body, headers=headers, timeout=5)

    r = post(worker1, "tensorboard", 6006)
    assert r.status_code == 403 and "only the chief (worker:0)" in r.json()["error"]
    assert "tensorboard" not in job.snapshot().endpoints
    assert post(chief, "tensorboard", 6006).status_code == 200
    assert post(worker1, "tensorboard", 6666).status_code == 403
    assert post(worker1, "metrics", 7000).status_code == 200  # its own: fine
    r = post(chief, "metrics", 7001)
    assert r.status_code == 403 and "worker:1's, not worker:0's" in r.json()["error"]
    assert post(worker1, "metrics", 7002).status_code == 200  # it may move its own
    assert job.snapshot().endpoints == {
        "tensorboard": url, "metrics": "http://127.0.0.1:7002/"
    }  # fmt: skip
    events, _ = job.events(0)
    owners = {e.data["name"]: e.data["task"] for e in events if e.kind is EventKind.ENDPOINT}
    assert owners == {"tensorboard": "worker:0", "metrics": "worker:1"}


def test_an_endpoints_key_goes_to_the_job_token_only_and_never_into_the_snapshot(job):
    host = job.snapshot().task("worker:0").host
    url, key, path_key = f"http://{host}:6006/", "k" * 43, "p" * 32
    chief = bearer(own_token(job))
    body = {"name": "tensorboard", "url": url, "key": key, "path_key": path_key}
    r = requests.post(api(job, "endpoints"), json=body, headers=chief, timeout=5)
    assert r.status_code == 200, r.text

    assert job.session.get(api(job, "endpoints/tensorboard"), timeout=5).json() == {
        "name": "tensorboard",
        "url": url,
        "key": key,
    }
    assert job.endpoint("tensorboard") == EndpointAnswer("tensorboard", url, key)
    # The code a task runs holds its task's token: not enough for the key.
    r = requests.get(api(job, "endpoints/tensorboard"), headers=chief, timeout=5)
    assert r.status_code == 403 and "executor calls only" in r.json()["error"]
    assert requests.get(api(job, "endpoints/tensorboard"), timeout=5).status_code == 401
    assert job.endpoint("nope") is None
    # Snapshots are rendered into notebooks; events are served and kept beside the job.
    assert job.snapshot().endpoints == {"tensorboard": url}
    events, _ = job.events(0)
    public = json.dumps([job.snapshot().to_json(), [e.to_json() for e in events]])
    public += (job.record.dir / "events.jsonl").read_text()
    assert url in public and key not in public and path_key not in public

    for bad in ("short", "p" * 20 + "/x", "p" * 129):
        body = {"name": "tensorboard", "url": url, "key": key, "path_key": bad}
        r = requests.post(api(job, "endpoints"), json=body, headers=chief, timeout=5)
        assert r.status_code == 400 and "path_key" in r.json()["error"]
    assert job.endpoint("tensorboard").key == key  # a refused registration changed nothing

    job.kill()  # an ended job's ports are free for anyone: its endpoints lead nowhere
    assert job.endpoint("tensorboard") is None


def test_an_executor_acts_for_its_own_task_only(job):
    seen = own_token(job)
    assert seen != job.record.token
    assert "env None" in job.logs("worker:0")[0]  # the registration secret: not inherited
    own = bearer(seen)
    # Not another task's record, not the job's API, and the job's token makes no executor call.
    r = requests.post(
        api(job, "executor/result"),
        json={"task": "worker:1", "attempt": 1, "status": "error", "traceback": "forged"},
        headers=own,
        timeout=5,
    )
    assert r.status_code == 403 and "worker:0" in r.json()["error"]
    r = requests.post(
        api(job, "executor/register"),
        json={"task": "worker:1", "attempt": 1, "host": "10.0.0.1", "port": 1, "pid": 1},
        headers=own,
        timeout=5,
    )
    assert r.status_code == 403
    assert requests.post(api(job, "kill"), headers=own, timeout=5).status_code == 403
    r = job.session.post(api(job, "executor/heartbeat"), json={"task": "worker:1", "attempt": 1})
    assert r.status_code == 403
    tasks = {t.id: t for t in job.snapshot().tasks}
    assert tasks["worker:1"].host == "127.0.0.1" and not tasks["worker:1"].traceback
    # Its own heartbeat is fine.
    r = requests.post(
        api(job, "executor/heartbeat"), json={"task": "worker:0", "attempt": 1}, headers=own
    )
    assert r.status_code == 200


def test_a_token_in_the_query_string_is_not_logged(job):
    token = job.record.token
    assert requests.get(api(job, f"job?token={token}"), timeout=5).status_code == 401
    time.sleep(0.2)
    log = (job.record.dir / "am.log").read_text()
    assert "/api/v1/job?token=[redacted]" in log
    assert token not in log


# --- fuzz: bounded, seeded, 127.0.0.1 only ---------------------------------------------------

PATHS = [
    "job", "events", "feed", "logs", "result", "endpoints", "endpoints/tensorboard",
    "endpoints/" + "x" * 64, "metrics", "executor/register", "executor/cluster-spec",
    "executor/heartbeat", "executor/logs", "executor/result", "nope", "cells", "cells/1",
]  # fmt: skip
VALUES = ["", "0", "-1", "1e20", "nan", "inf", "abc", "worker:0", "worker:9", "../../etc/passwd",
          "/tmp/x", "%00", "\u00e9", "9" * 30, "1", "0.5", str(2**62), str(2**44), str(10**26),
          "9" * 400, "NaN", "-inf", "\x00", "\uff11\uff12", "\u0663", "1_0", "x" * 5000,
          "worker:0=" + str(10**26), "worker:0=\uff11,worker:1=0",
          "worker:" + "9" * 400]  # fmt: skip
BODIES = [None, b"", b"{", b"[]", b"null", b"3", b'"s"', b"\xff\xfe", b'{"task": 1}',
          b'{"task": "worker:0", "attempt": "x"}', b'{"task": "worker:0", "attempt": 1e99}',
          b'{"task": "worker:0", "attempt": 1, "text": 5, "host": [], "port": -1}',
          b'{"task": ["worker:0"], "attempt": true, "progress": "x", "rss": "big"}',
          b'{"name": {}, "url": null}', b'{"reason": ["x"]}',
          b'{"name": "tensorboard", "url": "http://internal-admin.example:80/"}',
          b'{"name": "tensorboard", "url": "http://127.0.0.1:6006/x?y#z"}',
          b'{"name": "w\\u0000b", "url": "http://127.0.0.1:1/"}',
          b'{"name": "' + b"x" * 5000 + b'", "url": "http://127.0.0.1:1/"}',
          b'{"name": "tb", "url": "http://127.0.0.1:' + b"9" * 400 + b'/"}',
          b'{"task": "worker:1", "attempt": 1, "host": "evil.example", "port": 1, "pid": 1}',
          b'{"task": "worker:0", "attempt": 1, "port": ' + b"9" * 400 + b', "pid": NaN}',
          b'{"task": "worker:0", "attempt": Infinity, "rss": -Infinity}',
          b'{"task": "' + b"w" * 5000 + b'", "attempt": 1}']  # fmt: skip
FIELDS = ["task", "attempt", "offset", "offsets", "limit", "since", "version", "timeout", "after"]


def test_fuzz_the_am_api_no_500_and_the_job_goes_on(job):
    rng = random.Random(20240601)
    job_token = job.record.token
    tokens = [job_token, own_token(job), "", "x", "t\u00f6k", job_token + " "]
    started = time.monotonic()
    for _ in range(400):
        path = rng.choice(PATHS)
        params = {k: rng.choice(VALUES) for k in rng.sample(FIELDS, rng.randint(0, 4))}
        token = rng.choice(tokens)
        headers = {"Authorization": f"Bearer {token}".encode()} if token else {}
        method = rng.choice(["GET", "POST", "PUT"])
        body = rng.choice(BODIES) if method != "GET" else None
        r = requests.request(
            method, api(job, path), params=params, data=body, headers=headers, timeout=5
        )
        assert r.status_code < 500, (method, path, params, body, r.status_code, r.text)
        assert time.monotonic() - started < 120
    assert job.snapshot().state == "RUNNING"
    # Endpoints are facts: whatever was posted, none is off the tasks' host, none but the chief's
    # is tensorboard (worker:0 is the chief: its token was among the fuzz's).
    assert all(url.startswith("http://127.0.0.1:") for url in job.snapshot().endpoints.values())
    assert {t.host for t in job.snapshot().tasks} == {"127.0.0.1"}
    assert job.kill("after the fuzz")
    deadline = time.monotonic() + 15
    while job.snapshot().state != "KILLED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert job.snapshot().reason == "after the fuzz"
    assert json.loads(job.session.get(api(job, "result"), timeout=5).text)["state"] == "KILLED"
