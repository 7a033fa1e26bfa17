"""The heartbeat sidecar stops its task when the AM says the attempt is over (410).

The executor runs as ``python -m tony_jupyter.executor``. When its main module was itself
``__main__``, the sidecar's ``except Stale`` named a second copy of the class and could not catch
the one ``AMLink.call`` raised: the sidecar died silently and the task ran on. Here a stand-in AM
answers every heartbeat with 410 while it never hands out a cluster spec, so only the sidecar can
end the task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tony_jupyter.executor.heartbeat import STOP_GRACE_S


class StaleAM(BaseHTTPRequestHandler):
    heartbeats = 0

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.endswith("/executor/heartbeat"):
            type(self).heartbeats += 1
            self._answer(410, {"command": "stop", "error": "attempt 1 is over"})
        elif self.path.endswith("/executor/register"):  # the task's own token, for its secret
            self._answer(200, {"ok": True, "token": "own"})
        else:
            self._answer(200, {})

    def do_GET(self) -> None:
        threading.Event().wait(0.5)  # a long-poll that never yields a cluster spec
        self._answer(200, {"cluster_spec": None})


@pytest.fixture
def stale_am():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StaleAM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _executor(stale_am, tmp_path, **popen) -> tuple[int, bytes]:
    env = {
        **os.environ,
        "TONY_TASK_ID": "worker:0",
        "TONY_ATTEMPT": "1",
        "TONY_AM_URL": stale_am,
        "TONY_TOKEN": "t",
        "TONY_HEARTBEAT_MS": "200",
        "TONY_BUNDLE_DIR": str(tmp_path),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tony_jupyter.executor"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        **popen,
    )
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"the task ran on after its attempt was over:\n{out.decode()[-2000:]}")
    return proc.returncode, out


def test_sidecar_stops_the_task_when_its_attempt_is_over(stale_am, tmp_path):
    code, out = _executor(stale_am, tmp_path)
    assert StaleAM.heartbeats >= 1
    assert code == -15, out.decode()[-2000:]  # SIGTERM from the sidecar
    assert b"Traceback" not in out, out.decode()[-2000:]
    # ... and says why, in the task's log.
    assert b"the AM refused this task's heartbeat (410: attempt 1 is over)" in out, out.decode()


def test_a_task_that_ignores_sigterm_is_killed_after_the_grace(stale_am, tmp_path):
    # As TensorFlow's coordination service does under MultiWorkerMirroredStrategy (it takes
    # SIGTERM for a preemption notice): an ignored signal stays ignored across exec.
    def ignore_sigterm() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    started = time.monotonic()
    code, out = _executor(stale_am, tmp_path, preexec_fn=ignore_sigterm)
    assert code == -9, out.decode()[-2000:]  # SIGKILL, STOP_GRACE_S after the SIGTERM
    assert time.monotonic() - started >= STOP_GRACE_S
    assert b"the AM refused this task's heartbeat (410" in out, out.decode()
