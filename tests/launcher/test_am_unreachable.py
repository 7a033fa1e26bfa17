"""A job's AM that is up on its node (registered with the RM) but cannot be reached from the
notebook's host: the launcher says which address could not be reached from which host, within
seconds, instead of waiting out the AM's start timeout and blaming the queue. The RM is a fake
answering as a real one does; the AM's port is a real one, closed."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.yarn import amstart


class FakeRM:
    def __init__(self, port: int):
        self.report = {"state": "RUNNING", "amRPCAddress": f"127.0.0.1:{port}"}

    def app(self, app_id: str) -> dict:
        return self.report

    def with_report(self, report: dict) -> FakeRM:
        self.report = report
        return self


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_am_refused_from_here_is_named_not_waited_out(monkeypatch):
    monkeypatch.setattr(amstart, "UNREACHABLE_AFTER_S", 0.3)
    port = closed_port()
    with pytest.raises(BackendError) as e:
        amstart.wait_for_am(FakeRM(port), "application_1_0001", "t" * 32)
    msg = str(e.value)
    assert f"the job's AM is up at 127.0.0.1:{port} (application_1_0001 RUNNING" in msg
    assert (
        f"this host ({socket.gethostname()}) cannot reach it: [Errno 111] Connection refused" in msg
    )
    assert "did not start within" not in msg and "queue" not in msg


@pytest.mark.parametrize(
    "error, counted",
    [
        (requests.ConnectTimeout("connect timed out"), True),
        (
            requests.ConnectionError(
                "HTTPConnectionPool(host='worker1', port=1): Max retries exceeded (Caused by "
                "NewConnectionError('<conn>: Failed to establish a new connection: [Errno 113] "
                "No route to host'))"
            ),
            True,
        ),
        # Connected, then slow (the AM still importing its server) or closed: reachable.
        (requests.ReadTimeout("read timed out"), False),
        (requests.ConnectionError("('Connection aborted.', RemoteDisconnected())"), False),
    ],
)
def test_only_no_connection_at_all_counts_as_unreachable(error, counted):
    assert amstart.not_connected(error) is counted


def test_an_am_that_never_registers_is_worded_by_how_far_it_got(monkeypatch):
    monkeypatch.setattr(amstart, "AM_START_TIMEOUT_S", 0.3)
    waiting = {
        "state": "ACCEPTED",
        "diagnostics": "[Wed Nov 26] Application is added to the "
        "scheduler and is not yet activated. Queue's AM resource limit exceeded.",
    }
    # Waiting in its queue for the AM's container does not count (waited out, not timed out),
    # until the application ends: here killed by its owner after 1 s.
    rm = FakeRM(1).with_report(waiting)
    threading.Timer(1.0, rm.with_report, [{**waiting, "state": "KILLED"}]).start()
    t0 = time.monotonic()
    with pytest.raises(BackendError) as e:
        amstart.wait_for_am(rm, "application_1_0002", "t" * 32)
    assert time.monotonic() - t0 >= 1.0
    assert "the job's AM ended before it started serving (application_1_0002 KILLED" in str(e.value)
    launched = {
        "state": "ACCEPTED",
        "diagnostics": "AM container is launched, waiting for AM container to Register with RM",
        "amHostHttpAddress": "worker1:8042",
    }
    with pytest.raises(BackendError) as e:
        amstart.wait_for_am(FakeRM(1).with_report(launched), "application_1_0003", "t" * 32)
    msg = str(e.value)
    assert "its container was launched on worker1 but the AM never registered" in msg
    assert "localizing the job's files" in msg and "queue" not in msg


def test_a_job_that_ends_before_the_wait_gives_up_is_still_named_unreachable(monkeypatch):
    """A quick job serves its tasks and ends while this host still tries to reach its AM: the
    cell says what it could not reach, not that the AM never served."""
    port = closed_port()
    rm = FakeRM(port)
    reports = [dict(rm.report), dict(rm.report), {"state": "FINISHED", "finalStatus": "SUCCEEDED"}]

    def app(app_id):
        return reports.pop(0) if len(reports) > 1 else reports[0]

    monkeypatch.setattr(rm, "app", app)
    with pytest.raises(BackendError) as e:
        amstart.wait_for_am(rm, "application_1_0004", "t" * 32)
    msg = str(e.value)
    assert f"the job's AM was up at 127.0.0.1:{port} (application_1_0004, registered" in msg
    assert "it has ended since: FINISHED/SUCCEEDED" in msg
    assert "cannot reach it: [Errno 111] Connection refused" in msg
    assert "before it started serving" not in msg and "was killed" not in msg
