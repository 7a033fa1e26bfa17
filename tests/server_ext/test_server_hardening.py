"""The server extension under hostile or careless input (in-process, jp_fetch; 127.0.0.1 only):
the proxy hands an upstream none of the user's Jupyter credentials and forgets an ended job's
endpoints; log reads stay inside the job; no input answers 500."""

import json
import random
import time

import pytest
import tornado.httpclient
import tornado.web
from helpers.server import finished_job, status
from tornado import httpserver, netutil

from tony_jupyter.server_ext.sandbox import capability

pytest_plugins = ["pytest_jupyter.jupyter_server"]

SEEN: list[dict] = []


class HeaderEcho(tornado.web.RequestHandler):
    """Stands in for TensorBoard, or for whoever listens on a port a job has freed."""

    def get(self, path):
        SEEN.append({"uri": self.request.uri, "headers": dict(self.request.headers)})
        self.finish({"uri": self.request.uri})

    post = get

    def check_xsrf_cookie(self):
        pass


@pytest.fixture
def upstream():  # overrides test_server_api's: running_job registers this one
    SEEN.clear()
    sockets = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(tornado.web.Application([("/(.*)", HeaderEcho)]))
    server.add_sockets(sockets)
    yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"
    server.stop()


async def test_the_upstream_gets_no_jupyter_credentials(jp_fetch, jp_serverapp, running_job):
    token = jp_serverapp.identity_provider.token
    r = await jp_fetch(
        "tony", "proxy", running_job.job_id, "tensorboard", "data",
        params={"token": token, "run": "a/b"},
        headers={"Authorization": f"token {token}", "Cookie": "username-127-0-0-1=secret"},
    )  # fmt: skip
    assert r.code == 200
    [hit] = SEEN
    sent = {k.lower(): v for k, v in hit["headers"].items()}
    assert "authorization" not in sent and "cookie" not in sent
    assert token not in json.dumps(hit)
    assert hit["uri"] == "/data?run=a%2Fb"


async def test_the_upstream_gets_the_endpoints_key_instead(jp_fetch, jp_serverapp, running_job):
    """TensorBoard's guard takes the key the chief registered; the proxy gets it from the AM."""
    url = running_job.snapshot().endpoints["tensorboard"]
    key = "k" * 43
    body = {"name": "tensorboard", "url": url, "key": key, "path_key": "p" * 32}
    running_job.session.post(
        f"{running_job.am_url()}/api/v1/endpoints", json=body, timeout=5
    ).raise_for_status()
    token = jp_serverapp.identity_provider.token
    r = await jp_fetch(
        "tony", "proxy", running_job.job_id, "tensorboard", "data",
        headers={"Authorization": f"token {token}", "Cookie": "proxy-user=alice"},
    )  # fmt: skip
    assert r.code == 200
    [hit] = SEEN
    sent = {k.lower(): v for k, v in hit["headers"].items()}
    assert sent["authorization"] == f"Bearer {key}" and "cookie" not in sent
    assert token not in json.dumps(hit) and "p" * 32 not in json.dumps(hit)
    jobs = await jp_fetch("tony", "api", "jobs", running_job.job_id)
    assert key not in jobs.body.decode()  # the server's API shows no key either


async def test_the_proxy_forgets_an_ended_jobs_endpoint(jp_fetch, running_job):
    parts = ("tony", "proxy", running_job.job_id, "tensorboard", "x")
    assert await status(jp_fetch, *parts) == 200
    running_job.kill("done")
    deadline = time.monotonic() + 20
    while running_job.snapshot().state != "KILLED" and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2.1)  # the proxy's endpoint cache
    # The upstream stands for a stranger now listening on the job's freed port.
    assert await status(jp_fetch, *parts) == 404
    assert len(SEEN) == 1


async def test_a_websocket_to_an_unregistered_endpoint_is_refused_before_the_upgrade(
    jp_ws_fetch, running_job
):
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_ws_fetch("tony", "proxy", running_job.job_id, "nope", "ws")
    assert e.value.code == 404


def ended_job_with_a_task(home, tmp_path) -> str:
    job = finished_job(home)
    d = home / "jobs" / job
    snap = json.loads((d / "status.json").read_text())
    snap["tasks"] = [
        {"id": "worker:0", "type": "worker", "index": 0, "tracked": True, "state": "SUCCEEDED"}
    ]
    snap["attempt"] = 1
    (d / "status.json").write_text(json.dumps(snap))
    (d / "logs" / "attempt-1").mkdir(parents=True)
    (d / "logs" / "attempt-1" / "worker-0.log").write_text("the job's own log\n")
    return job


async def test_logs_of_an_ended_job_stay_inside_it(jp_fetch, tony_home, tmp_path):
    job = ended_job_with_a_task(tony_home, tmp_path)
    (tmp_path / "x.log").write_text("outside the job")
    hops = "../" * len(
        (tony_home / "jobs" / job / "logs" / "attempt-1").relative_to(tmp_path).parts
    )
    for task in (hops + "x", str(tmp_path / "x"), "worker:1"):
        r = await jp_fetch(
            "tony", "api", "jobs", job, "logs", params={"task": task}, raise_error=False
        )
        assert r.code == 404, (task, r.body)
        assert b"outside" not in r.body and b"worker:0" in r.body
    got = await jp_fetch("tony", "api", "jobs", job, "logs", params={"task": "worker:0"})
    assert json.loads(got.body)["text"] == "the job's own log\n"


@pytest.mark.parametrize(
    "offset", ["100000000000000000000", "-1", "1e20", "x", "\uff11", "1_0", "9" * 5000]
)
async def test_a_bad_offset_is_a_400(jp_fetch, tony_home, tmp_path, offset):
    job = ended_job_with_a_task(tony_home, tmp_path)
    params = {"task": "worker:0", "offset": offset}
    assert await status(jp_fetch, "tony", "api", "jobs", job, "logs", params=params) == 400


@pytest.mark.parametrize("offset", [2**62, 2**44])
async def test_an_offset_past_the_logs_end_reads_nothing(jp_fetch, tony_home, tmp_path, offset):
    job = ended_job_with_a_task(tony_home, tmp_path)  # read from its file, its AM gone
    params = {"task": "worker:0", "offset": str(offset)}
    got = await jp_fetch("tony", "api", "jobs", job, "logs", params=params)
    assert json.loads(got.body) == {"task": "worker:0", "offset": offset, "text": ""}


VALUES = ["", "0", "-1", "1e20", "100000000000000000000", "nan", "worker:0", "../../x", "\u00e9",
          str(2**62), str(2**44), str(10**26), "9" * 400, "NaN", "-inf", "\x00", "a\x00b",
          "\uff11\uff12", "\u0663", "1_0", "x" * 5000, "worker:" + "9" * 400]  # fmt: skip


async def test_fuzz_the_server_routes_no_500(jp_fetch, running_job, tony_home, tmp_path):
    rng = random.Random(1234)
    old = ended_job_with_a_task(tony_home, tmp_path)
    started = time.monotonic()
    for _ in range(160):
        job = rng.choice([running_job.job_id, old, "tony_nope", "..", "a" * 200, "a" * 5000])
        endpoint = rng.choice(["tensorboard", "nope", "..", "x" * 80, "\uff54b"])
        cap = rng.choice([capability(running_job.job_id, "tensorboard"), "A" * 43, "x" * 5000])
        parts = rng.choice(
            [
                ("tony", "api", "jobs"),
                ("tony", "api", "jobs", job),
                ("tony", "api", "jobs", job, "detail"),
                ("tony", "api", "jobs", job, "events"),
                ("tony", "api", "jobs", job, "logs"),
                ("tony", "proxy", job, endpoint, "a"),
                ("tony", "framed", job, endpoint, cap, "a"),
            ]
        )
        keys = rng.sample(["task", "offset", "attempt", "since", "timeout"], rng.randint(0, 3))
        params = {k: rng.choice(VALUES) for k in keys}
        if "timeout" in params:
            params["timeout"] = "0"  # long-polls are not what this is about
        headers = {"Sec-Fetch-Mode": "navigate"} if rng.random() < 0.3 else {}  # a browser's
        code = await status(jp_fetch, *parts, params=params, headers=headers)
        assert code < 500, (parts, params, headers, code)
        assert time.monotonic() - started < 60
    kill = await status(jp_fetch, "tony", "api", "jobs", old, "kill", method="POST", body="")
    assert kill == 200  # an ended job's: nothing to kill, and no error
    assert running_job.snapshot().state == "RUNNING"
    assert await status(jp_fetch, "tony", "proxy", running_job.job_id, "tensorboard", "x") == 200
