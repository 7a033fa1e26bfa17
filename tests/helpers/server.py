"""The server extension's test fixtures: an upstream that records what reached it (it stands in
for TensorBoard), a real job with an endpoint registered there, and a finished job's record."""

import json
import time

import pytest
import tornado.httpclient
import tornado.web
import tornado.websocket
from tornado import httpserver, netutil

from helpers.jobs import wait_no_processes
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import submit
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args

HITS: list[tuple[str, str]] = []


class Echo(tornado.web.RequestHandler):
    def _echo(self, path):
        HITS.append((self.request.method, self.request.uri))
        self.finish({"method": self.request.method, "uri": self.request.uri})

    get = post = _echo

    def check_xsrf_cookie(self):
        pass


class WSEcho(tornado.websocket.WebSocketHandler):
    def on_message(self, message):
        self.write_message("echo:" + message)


@pytest.fixture
def upstream():
    HITS.clear()
    app = tornado.web.Application([("/ws", WSEcho), ("/(.*)", Echo)])
    sockets = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"
    server.stop()


@pytest.fixture
def running_job(tony_home, upstream):
    """A real job (sleeping) on the backend ``tony_home`` points at (local, or YARN for the
    tests that use ``backend``), with a 'tensorboard' endpoint registered at ``upstream``."""
    _, spec = parse_job_args("--workers 1 --no-tensorboard")
    client = open_client(submit(spec, make_bundle("import time\ntime.sleep(600)", {})))
    try:
        deadline = time.monotonic() + 120  # YARN: containers under load
        while client.snapshot().state != "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.snapshot().state == "RUNNING"
        # An endpoint must be on a host of the job's tasks: the upstream (on 127.0.0.1) named by
        # that host's name, as the task's TensorBoard would be ("localhost" on the devcluster).
        host = client.snapshot().task("worker:0").host
        client.session.post(
            f"{client.am_url()}/api/v1/endpoints",
            json={"name": "tensorboard", "url": upstream.replace("127.0.0.1", host)},
            timeout=5,
        ).raise_for_status()
        yield client
    finally:
        client.kill()
        client.release()
        assert client.wait_am_exit(30)
    assert wait_no_processes(tony_home) == []


def finished_job(home, job_id="tony_20240101_000000_aaaaaa", state="SUCCEEDED"):
    d = home / "jobs" / job_id
    d.mkdir(parents=True)
    (d / "spec.json").write_text("{}")
    (d / "token").write_text("t")
    snap = {
        "job_id": job_id,
        "name": "old",
        "state": state,
        "tasks": [],
        "endpoints": {},
        "started": 1.0,
        "chief": "worker:0",
    }
    (d / "status.json").write_text(json.dumps(snap))
    return job_id


async def status(jp_fetch, *parts, **kw):
    try:
        r = await jp_fetch(*parts, raise_error=False, follow_redirects=False, **kw)
    except tornado.httpclient.HTTPClientError as e:
        return e.code
    return r.code
