"""amcall.py, the one transport call of the job client and the executor's AM link: which
failures are tried again, and what each answer's status becomes on the calling side; then the
same mapping through the AM link against a real HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tony_jupyter.core import amcall
from tony_jupyter.executor.link import AMLink, LinkError, Stale


class Exchanges:
    """Answers (or errors) handed out one per try."""

    def __init__(self, *outcomes):
        self.outcomes, self.tries = list(outcomes), 0

    def __call__(self):
        self.tries += 1
        got = self.outcomes.pop(0)
        if isinstance(got, BaseException):
            raise got
        return got


def test_a_get_whose_connection_failed_is_tried_once_more():
    lost = []
    ex = Exchanges(ConnectionResetError("closed"), (200, "ok"))
    assert amcall.call(ex, method="GET", on_lost=lambda: lost.append(1)) == (200, "ok")
    assert ex.tries == 2 and lost == [1]


def test_a_post_is_tried_once_and_no_answer_is_unanswered():
    ex = Exchanges(ConnectionRefusedError("refused"), (200, "never"))
    with pytest.raises(amcall.Unanswered) as e:
        amcall.call(ex, method="POST")
    assert ex.tries == 1 and isinstance(e.value.__cause__, ConnectionRefusedError)
    twice = Exchanges(requests.ConnectionError("a"), requests.ConnectionError("b"))
    with pytest.raises(amcall.Unanswered, match="^b$"):
        amcall.call(twice, method="GET", lost=(requests.ConnectionError,))
    assert twice.tries == 2


def test_only_the_named_errors_count_as_no_answer():
    ex = Exchanges(requests.ReadTimeout("slow"))
    with pytest.raises(requests.ReadTimeout):  # the job client lets a slow AM's timeout through
        amcall.call(ex, method="GET", lost=(requests.ConnectionError,))
    assert ex.tries == 1


def test_a_bare_500_to_a_get_is_tried_again_once():
    ex = Exchanges((500, "bare"), (200, "ok"))
    assert amcall.call(ex, method="GET", retry_status=(500,), pause_s=0) == (200, "ok")
    again = Exchanges((500, "bare"), (500, "still"))
    assert amcall.call(again, method="GET", retry_status=(500,), pause_s=0) == (500, "still")
    post = Exchanges((500, "bare"))
    assert amcall.call(post, method="POST", retry_status=(500,), pause_s=0) == (500, "bare")


@pytest.mark.parametrize(
    "status, raised",
    [(200, None), (204, None), (410, amcall.Stale), (403, amcall.Refused), (503, amcall.Refused)],
)
def test_each_status_means_one_thing(status, raised):
    if raised is None:
        amcall.check(status, "")
        return
    with pytest.raises(raised) as e:
        amcall.check(status, "why")
    assert str(e.value) == ("why" if raised is amcall.Stale else f"{status} why")


@pytest.fixture
def am():
    """A real HTTP server answering each path with the status it names (/api/v1/<status>)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            status = int(self.path.split("/")[3].split("?")[0])
            body = json.dumps({"error": "attempt over"} if status >= 400 else {"ok": 1})
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_am_link_maps_statuses_through_the_one_check(am):
    link = AMLink(am, "t" * 32, "worker:0", 1)
    assert link.call("GET", "200") == {"ok": 1}
    with pytest.raises(Stale, match="attempt over"):
        link.call("GET", "410")
    with pytest.raises(LinkError, match=r"^GET 503: 503 attempt over$"):
        link.call("GET", "503")
    assert Stale is amcall.Stale


def test_the_am_link_names_an_am_that_is_not_there():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    link = AMLink(f"http://127.0.0.1:{port}", "t" * 32, "worker:0", 1)
    with pytest.raises(LinkError, match=r"^GET job: \[Errno 111\] Connection refused$"):
        link.call("GET", "job")
