"""launcher/outcome.py: each way a launch comes out, worded by the one function (``words``);
``started`` passes a start through and raises the rest as the cell's BackendError. The local
launcher's outcomes come from a real AM process (launcher/local.await_am)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from tony_jupyter.core import supervise
from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.jobdir import JobDir
from tony_jupyter.launcher import local, outcome


def test_started_passes_through():
    up = outcome.Started("http://127.0.0.1:1")
    assert outcome.started(up) is up
    assert outcome.words(up) == "the job's AM serves at http://127.0.0.1:1"


def test_a_local_am_that_exits_is_worded_with_its_code_and_log_tail(tmp_path):
    files = JobDir(tmp_path)
    argv = [sys.executable, "-c", "import sys; print('no such module: foo'); sys.exit(3)"]
    proc = supervise.start(argv, log=files.am_log)
    got = local.await_am(proc, files)
    assert got == outcome.AmExited(code=3, log_tail="no such module: foo\n")
    with pytest.raises(BackendError) as e:
        outcome.started(got)
    assert str(e.value) == (
        "the job's AM exited with code 3 before it started serving:\nno such module: foo\n"
    )


def test_a_local_am_that_does_not_serve_in_time_names_its_log(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "AM_START_TIMEOUT_S", 0.3)
    files = JobDir(tmp_path)
    proc = supervise.start([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        got = local.await_am(proc, files)
    finally:
        proc.stop(grace=1)
    assert got == outcome.TimedOut(0.3, log=files.am_log)
    assert outcome.words(got) == f"the job's AM did not start within 0.3 s; see {files.am_log}"


def test_a_local_am_that_serves_is_started(tmp_path):
    files = JobDir(tmp_path)
    argv = [sys.executable, "-c", f"open({str(files.am_info)!r}, 'w'); import time; time.sleep(60)"]
    proc = supervise.start(argv)
    try:
        assert local.await_am(proc, files) == outcome.Started()
    finally:
        proc.stop(grace=1)


def test_a_yarn_am_that_ended_is_worded_with_its_state_and_diagnostics():
    got = outcome.AmExited(
        log_tail="\nTraceback: ...",
        app_id="application_1_0001",
        state="FAILED/FAILED",
        diagnostics="  Application failed 1 times  ",
    )
    assert outcome.words(got) == (
        "the job's AM ended before it started serving (application_1_0001 FAILED/FAILED): "
        "Application failed 1 times\nTraceback: ..."
    )


def test_a_yarn_timeout_is_worded_by_the_applications_state():
    queued = outcome.TimedOut(
        180, app_id="application_1_0002", app={"state": "ACCEPTED", "diagnostics": "waiting"}
    )
    assert outcome.words(queued) == (
        "the job's AM did not start within 180 s (application_1_0002 is ACCEPTED: waiting); "
        "the queue may be full. The application was killed."
    )
    launched = outcome.TimedOut(
        180,
        app_id="application_1_0003",
        app={"state": "ACCEPTED", "amContainerLogs": "x", "amHostHttpAddress": "node7:8042"},
        log_tail="\n(log)",
    )
    msg = outcome.words(launched)
    assert msg.startswith("the job's AM did not start within 180 s (application_1_0003 is ")
    assert "its container was launched on node7 but the AM never registered" in msg
    assert msg.endswith("The application was killed.\n(log)") and "queue" not in msg


def test_a_queue_refusal_names_the_queue_and_the_fix():
    got = outcome.QueueRefused("prod", "alice", "User alice does not have permission to submit")
    with pytest.raises(BackendError) as e:
        outcome.started(got)
    assert str(e.value) == (
        "YARN refused the job in queue 'prod': User alice does not have permission to submit. "
        "Submit to a queue alice may use (--queue NAME, tony.yarn.queue), or ask the cluster's "
        "administrators for access to this one"
    )


def test_an_unreachable_am_names_this_host_and_the_error():
    err = "HTTPConnectionPool(...): [Errno 111] Connection refused'))"
    up = outcome.Unreachable("application_1_0004", "http://node7:4040", err, "ConnectionError")
    msg = outcome.words(up)
    assert msg.startswith(
        "the job's AM is up at node7:4040 (application_1_0004 RUNNING, registered with the "
        f"ResourceManager), but this host ({socket.gethostname()}) cannot reach it: "
        "[Errno 111] Connection refused. "
    )
    assert msg.endswith("The application was killed.")
    ended = outcome.Unreachable(
        "application_1_0005", "http://n:1", "timed out", "ConnectTimeout", "FINISHED/SUCCEEDED"
    )
    msg = outcome.words(ended)
    assert "the job's AM was up at n:1" in msg and "it has ended since: FINISHED/SUCCEEDED" in msg
    assert "cannot reach it: ConnectTimeout." in msg and "was killed" not in msg


def test_one_function_words_every_launch_failure():
    """No launcher module words a launch failure itself: the texts are only in outcome.py."""
    pkg = Path(local.__file__).parent
    texts = ("did not start within", "before it started serving", "YARN refused the job")
    for path in pkg.rglob("*.py"):
        if path.name != "outcome.py":
            body = path.read_text()
            assert not [t for t in texts if t in body], path


def test_the_warm_ams_start_is_worded_by_the_same_function(monkeypatch):
    from tony_jupyter.launcher.yarn import warmkeeper as warm

    class RM:
        def __init__(self, report):
            self.report = report

        def app(self, app_id):
            return self.report

    failed = RM({"state": "FAILED", "finalStatus": "FAILED", "diagnostics": "no memory"})
    got = warm.warm_am_registered(failed, "application_1_0006")
    assert outcome.words(got) == (
        "the warm AM ended before it started serving (application_1_0006 FAILED/FAILED): no memory"
    )
    monkeypatch.setattr(warm, "AM_START_TIMEOUT_S", 0.2)
    with pytest.raises(BackendError, match=r"^the warm AM did not start within 0.2 s \("):
        warm.wait_for_url(RM({"state": "ACCEPTED"}), "application_1_0007")
