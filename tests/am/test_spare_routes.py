"""The warm YARN AM's spare routes (am/yarn/warmroutes.py), in process on 127.0.0.1 (issue 28,
findings 1, 2 and 4): every route checks its secret before it reads a body (a 40 MB body with a
wrong token is refused unread), bounds the body, answers 400 to one that is not JSON; a spare
container's launch secret is good once; a task goes to its own container only, once; the
routes close once the job is handed."""

import asyncio
import base64
import json
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from tony_jupyter.am.yarn.warmpool import WarmPool
from tony_jupyter.am.yarn.warmroutes import router
from tony_jupyter.core.protocol import Ok, WarmSecret, WarmStatus, WarmTask, token_verifier
from tony_jupyter.core.warmproc import SPARE_TOKEN

TOKEN = "k" * 43


async def fetch(port, path, token=None, body=None, method=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        r = await AsyncHTTPClient().fetch(
            f"http://127.0.0.1:{port}/api/v1/{path}",
            method=method or ("GET" if body is None else "POST"),
            body=body,
            headers=headers,
            request_timeout=30,
            raise_error=True,
        )
    except HTTPClientError as e:
        return e.code, e.response.body if e.response else b""
    return r.code, r.body


def scenario(test):
    async def run():
        provider = SimpleNamespace(lock=threading.Lock(), job_dir=Path(tempfile.mkdtemp()))
        pool = WarmPool(provider, token_verifier(TOKEN))
        pool.job = asyncio.get_running_loop().create_future()
        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(router(pool, web.Application([])), max_body_size=200 << 20)
        server.add_sockets(sockets)
        try:
            await test(pool, sockets[0].getsockname()[1])
        finally:
            server.stop()

    asyncio.run(run())


def test_the_hand_over_checks_the_token_before_the_body_and_refuses_non_json():
    async def test(pool, port):
        big = b"x" * (40 << 20)
        code, _ = await fetch(port, "spare/job", "wrong", big)
        assert code == 403 and not pool.job.done()
        code, _ = await fetch(port, "spare/job", None, b"{}")
        assert code == 403
        code, body = await fetch(port, "spare/job", TOKEN, b"not json")
        assert code == 400 and b"not JSON" in body
        code, body = await fetch(port, "spare/job", TOKEN, b'{"files": [1]}')
        assert code == 400 and b"files" in body
        code, body = await fetch(port, "spare/status", TOKEN)
        assert code == 200 and WarmStatus.checked(json.loads(body)) == WarmStatus(0, False)
        files = {"cell.py": base64.b64encode(b"1").decode()}
        code, body = await fetch(port, "spare/job", TOKEN, json.dumps({"files": files}).encode())
        assert code == 200 and pool.job.result() == files and Ok.checked(json.loads(body)).ok
        # Handed: the hand-over, hello and status routes are gone.
        for path in ("spare/job", "spare/status"):
            code, _ = await fetch(port, path, TOKEN, b"{}" if path == "spare/job" else None)
            assert code == 404, path

    scenario(test)


def test_a_launch_secret_is_good_once_and_a_task_goes_to_its_container_only():
    async def test(pool, port):
        a = pool.launch_env("container_a")[SPARE_TOKEN]
        b = pool.launch_env("container_b")[SPARE_TOKEN]
        code, _ = await fetch(port, "spare/hello?container=container_a", b, b"{}")
        assert code == 403  # b's secret is not a's
        code, body = await fetch(port, "spare/hello?container=container_a", a, b"{}")
        assert code == 200
        session_a = WarmSecret.checked(json.loads(body)).secret
        assert session_a != a
        code, body = await fetch(port, "spare/hello?container=container_b", b, b"{}")
        session_b = json.loads(body)["secret"]
        # Another container with a's launch secret (read from its launch_container.sh): refused,
        # and container_a is marked taken over.
        code, _ = await fetch(port, "spare/hello?container=container_a", a, b"{}")
        assert code == 403 and "container_a" in pool.taken_over
        code, _ = await fetch(port, "spare/task?container=container_a", session_a)
        assert code == 403  # its polling secret is gone with it
        # b's task: to b only, once.
        pool.assigned["container_b"] = WarmTask({"TONY_TOKEN": "secret"}, {})
        code, _ = await fetch(port, "spare/task?container=container_b", session_a)
        assert code == 403
        code, body = await fetch(port, "spare/task?container=container_b", session_b)
        assert code == 200 and WarmTask.checked(json.loads(body)).env["TONY_TOKEN"] == "secret"
        assert "container_b" not in pool.assigned
        pool.task_closed = True
        code, _ = await fetch(port, "spare/task?container=container_b", session_b)
        assert code == 404

    scenario(test)
