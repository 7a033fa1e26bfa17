"""A ResourceManager reached but slow to answer (a busy one): a GET is asked once more before
the user is told it cannot be reached; a POST never is (it may have been done). The RM is a
small HTTP server on 127.0.0.1 whose first answer comes late."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from helpers.fakehttp import reply, serving

from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.hadoopconf import Address
from tony_jupyter.launcher.yarn.rm import RMClient


class SlowFirst(BaseHTTPRequestHandler):
    calls: list[str] = []

    def _answer(self) -> None:
        SlowFirst.calls.append(self.command)
        if len(SlowFirst.calls) == 1:
            time.sleep(1.0)  # past the client's timeout
        reply(self, 200, {"clusterInfo": {"state": "STARTED", "haState": "ACTIVE"}})

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def rm() -> Iterator[RMClient]:
    SlowFirst.calls = []
    with serving(SlowFirst) as url:
        yield RMClient(Address(url, "a test"), "tester", timeout=0.3)


def test_a_get_that_times_out_once_is_asked_again(rm):
    assert rm.info()["haState"] == "ACTIVE"
    assert SlowFirst.calls == ["GET", "GET"]


def test_a_post_that_times_out_is_not_sent_twice(rm):
    with pytest.raises(BackendError, match="did not answer POST /apps/new-application"):
        rm._request("POST", "/apps/new-application")
    assert SlowFirst.calls == ["POST"]
