"""The executor's link to its AM (HTTP/1.1 by hand on a kept-alive socket): what it sends, and
how each kind of answer surfaces (JSON, 410 as Stale, errors and a gone AM as LinkError)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tony_jupyter.executor.link import AMLink, LinkError, Stale


class FakeAM(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as tornado
    seen: list = []

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: dict, close: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        if close:
            self.close_connection = True

    def do_GET(self) -> None:
        type(self).seen.append(("GET", self.path, self.headers["Authorization"], None))
        if "closing" in self.path:
            self._answer(200, {"n": len(self.seen)}, close=True)
        else:
            self._answer(200, {"path": self.path})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(("POST", self.path, self.headers["Authorization"], body))
        if self.path.endswith("/stale"):
            self._answer(410, {"command": "stop", "error": "attempt 1 is over"})
        elif self.path.endswith("/broken"):
            self._answer(500, {"error": "boom"})
        else:
            self._answer(200, {"ok": True, "big": "x" * 100_000})


@pytest.fixture
def am():
    FakeAM.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/"


def test_calls_carry_the_token_task_and_attempt(am):
    link = AMLink(url(am), "tok", "worker:1", 3)
    answer = link.post("executor/result", status="ok")
    assert answer["ok"] is True and len(answer["big"]) == 100_000  # read to its length
    got = link.call("GET", "executor/next-cell", params={"task": "worker:1", "after": 2})
    assert got == {"path": "/api/v1/executor/next-cell?task=worker%3A1&after=2"}
    post, get = FakeAM.seen
    assert post == (
        "POST",
        "/api/v1/executor/result",
        "Bearer tok",
        {"task": "worker:1", "attempt": 3, "status": "ok"},
    )
    assert get[2] == "Bearer tok"


def test_stale_and_errors(am):
    link = AMLink(url(am), "tok", "worker:0", 1)
    with pytest.raises(Stale, match="attempt 1 is over"):
        link.post("stale")
    with pytest.raises(LinkError, match="500 boom"):
        link.post("broken")
    assert link.post("fine")["ok"]  # the connection is still usable


def test_a_closed_connection_is_reopened(am):
    link = AMLink(url(am), "tok", "worker:0", 1)
    for _ in range(3):  # each answer closes the connection: the next call opens another
        assert link.call("GET", "closing")["n"] > 0
    assert link.post("fine")["ok"]


def test_a_gone_am_is_a_link_error():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAM)
    gone = url(server)
    server.server_close()  # nothing listens there now
    with pytest.raises(LinkError) as e:
        AMLink(gone, "tok", "worker:0", 1).post("fine")
    assert isinstance(e.value, OSError)
