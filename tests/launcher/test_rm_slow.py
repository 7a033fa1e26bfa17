"""A ResourceManager reached but slow to answer (a busy one): a GET is asked once more before
the user is told it cannot be reached; a POST never is (it may have been done). The RM is a
small HTTP server on 127.0.0.1 whose first answer comes late."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tony_jupyter.errors import BackendError
from tony_jupyter.launcher.yarn.conf import Address
from tony_jupyter.launcher.yarn.rm import RMClient


class SlowFirst(BaseHTTPRequestHandler):
    calls: list[str] = []

    def _answer(self) -> None:
        SlowFirst.calls.append(self.command)
        if len(SlowFirst.calls) == 1:
            time.sleep(1.0)  # past the client's timeout
        body = json.dumps({"clusterInfo": {"state": "STARTED", "haState": "ACTIVE"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def rm() -> Iterator[RMClient]:
    SlowFirst.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowFirst)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield RMClient(Address(url, "a test"), "tester", timeout=0.3)
    finally:
        server.shutdown()
        server.server_close()


def test_a_get_that_times_out_once_is_asked_again(rm):
    assert rm.info()["haState"] == "ACTIVE"
    assert SlowFirst.calls == ["GET", "GET"]


def test_a_post_that_times_out_is_not_sent_twice(rm):
    with pytest.raises(BackendError, match="did not answer POST /apps/new-application"):
        rm._request("POST", "/apps/new-application")
    assert SlowFirst.calls == ["POST"]
