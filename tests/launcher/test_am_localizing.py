"""A job's AM whose NodeManager is still localizing its container (a first job's packed venv
takes minutes to unpack on a node): the launcher waits for it past AM_START_TIMEOUT_S, up to
the localization timeout, as it does for the tasks. The RM is a fake answering as a real one
does; the NodeManager's REST API and the AM's are real HTTP servers on 127.0.0.1 serving what
a real one answers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.yarn import amstart

CID = "container_1_0001_01_000001"


class Node:
    """A NodeManager that localizes the AM's container for ``seconds``, then runs it; and the
    AM's own API, which answers once it runs."""

    def __init__(self, seconds: float):
        self.ready_at = time.monotonic() + seconds
        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == f"/ws/v1/node/containers/{CID}":
                    state = "RUNNING" if node.running else "LOCALIZING"
                    body = json.dumps({"container": {"id": CID, "state": state}}).encode()
                elif self.path == "/api/v1/job" and node.running:
                    body = b"{}"
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def running(self) -> bool:
        return time.monotonic() >= self.ready_at

    def app(self, app_id: str) -> dict:
        """The RM's app report: ACCEPTED with its AM container's log link while it localizes."""
        logs = f"http://127.0.0.1:{self.port}/node/containerlogs/{CID}/root"
        if not self.running:
            return {
                "state": "ACCEPTED",
                "amContainerLogs": logs,
                "diagnostics": "AM container "
                "is launched, waiting for AM container to Register with RM",
            }
        return {
            "state": "RUNNING",
            "amRPCAddress": f"127.0.0.1:{self.port}",
            "amContainerLogs": logs,
        }


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(amstart, "AM_START_TIMEOUT_S", 0.6)
    monkeypatch.setattr(amstart, "NM_ASK_EVERY_S", 0.05)


def test_an_am_localizing_longer_than_the_start_timeout_is_waited_for(quick):
    node = Node(seconds=2.0)
    try:
        t0 = time.monotonic()
        url = amstart.wait_for_am(node, "application_1_0001", "t" * 32)
        assert url == f"http://127.0.0.1:{node.port}"
        assert time.monotonic() - t0 >= 2.0
    finally:
        node.server.shutdown()


class Queued(Node):
    """An application that waits in its queue for its AM's container for ``queued`` seconds (no
    container, the RM's own diagnostics), then localizes and runs as Node."""

    def __init__(self, queued: float, seconds: float):
        super().__init__(seconds)
        self.queued_until = time.monotonic() + queued

    def app(self, app_id: str) -> dict:
        if time.monotonic() < self.queued_until:
            return {
                "state": "ACCEPTED",
                "diagnostics": "[Sun Nov 29 00:30:00 +0000 2026] Application is Activated, "
                "waiting for resources to be assigned for AM.",
            }
        return super().app(app_id)


def test_the_wait_in_the_queue_for_the_am_s_container_does_not_count(quick, monkeypatch):
    # 4 s queued, then 1 s localizing, against a 1.5 s start limit: the limit also absorbs the
    # polls' own time between the phases, which a loaded machine stretches
    monkeypatch.setattr(amstart, "AM_START_TIMEOUT_S", 1.5)
    node = Queued(queued=4.0, seconds=5.0)
    seen: list[dict] = []
    try:
        t0 = time.monotonic()
        url = amstart.wait_for_am(node, "application_1_0003", "t" * 32, accepted=seen.append)
        assert url == f"http://127.0.0.1:{node.port}"
        assert time.monotonic() - t0 >= 5.0
        assert "waiting for resources to be assigned for AM" in seen[0]["diagnostics"]
    finally:
        node.server.shutdown()


def test_localizing_past_the_localization_timeout_gives_up_and_says_so(quick):
    node = Node(seconds=60.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(BackendError) as e:
            amstart.wait_for_am(node, "application_1_0002", "t" * 32, localization_timeout_s=1.0)
        took = time.monotonic() - t0
        assert 1.5 <= took < 10, took
        assert "application_1_0002 is ACCEPTED" in str(e.value)
        assert "localizing" in str(e.value)
    finally:
        node.server.shutdown()


def test_a_node_that_does_not_answer_counts_as_not_localizing():
    assert (
        amstart.am_container_state(
            {"amContainerLogs": f"http://127.0.0.1:1/node/containerlogs/{CID}/root"},
            amstart.transport.session(),
        )
        is None
    )
    assert amstart.am_container_state({}, amstart.transport.session()) is None
