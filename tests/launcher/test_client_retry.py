"""The job client's calls to an AM: a GET answered once with a bare 500 is asked again; a POST
never is (it may have been done). The AM is a small HTTP server on 127.0.0.1."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest
from helpers.fakehttp import reply, serving

from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.client import JobClient, JobRecord


class FailsOnce(BaseHTTPRequestHandler):
    calls: list[str] = []

    def _answer(self) -> None:
        FailsOnce.calls.append(self.command)
        if len(FailsOnce.calls) > 1:
            reply(self, 200, {"events": [], "next": 0})
        else:
            reply(self, 500, {"error": "Internal Server Error"})

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


class AtUrl(JobClient):
    url = ""

    def am_url(self) -> str | None:
        return self.url

    def lost_snapshot(self, spec):  # not reached here
        raise AssertionError

    def wait_am_exit(self, timeout: float = 15) -> bool:  # not reached here
        raise AssertionError


@pytest.fixture
def client(tmp_path, tony_home):
    FailsOnce.calls = []
    (tmp_path / "jobs").mkdir()
    record = JobRecord("tony_test", tmp_path / "jobs")
    record.write_token("t" * 32)
    with serving(FailsOnce) as url:
        c = AtUrl(record)
        c.url = url
        yield c


def test_a_get_answered_500_once_is_asked_again(client):
    assert client.call_am("GET", "events") == {"events": [], "next": 0}
    assert FailsOnce.calls == ["GET", "GET"]


def test_a_post_answered_500_is_an_error_at_once(client):
    with pytest.raises(BackendError, match="answered 500"):
        client.call_am("POST", "kill")
    assert FailsOnce.calls == ["POST"]
