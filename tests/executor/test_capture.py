"""LogCapture.drain: once it returns, everything the task wrote before it (Python's prints and
native writes to fds 1 and 2) is in the buffer, so a session ships a cell's output before its
result. Run in a child process: the capture takes over fds 1 and 2."""

import subprocess
import sys

SCRIPT = """
import os, sys
from tony_jupyter.executor.capture import LogCapture
cap = LogCapture()
for i in range(300):
    print(f"line {i}")
    os.write(2, f"native {i}\\n".encode())
    sys.stdout.write("x" * (i * 97 % 5000) + "\\n")
    cap.drain()
    text = cap.take()
    assert f"line {i}\\n" in text and f"native {i}\\n" in text, (i, text[-200:])
cap.drain()
assert cap.take() == ""
cap.close()
os.write(1, b"all drained\\n")
"""


def test_drain_leaves_nothing_behind():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "all drained" in out.stdout


def test_lines_the_am_did_not_take_go_first_with_the_next_batch():
    import threading

    from tony_jupyter.executor.background import Background
    from tony_jupyter.executor.capture import LogCapture
    from tony_jupyter.executor.link import LinkError

    class AM:  # the AM's answers: the first log post fails (it was restarting), then it takes
        task, attempt = "worker:0", 1

        def __init__(self):
            self.got, self.fail = [], True

        def send(self, path, body, answer):
            if self.fail:
                self.fail = False
                raise LinkError("POST executor/logs: connection refused")
            self.got.append(body.text)
            return answer()

    logs = LogCapture.__new__(LogCapture)  # its buffer only: no file descriptors redirected
    logs.buf, logs.lock = ["line 1\n", "line 2\n"], threading.Lock()
    am = AM()
    bg = Background(am, logs, beat=None)
    try:
        bg.ship_logs()
    except LinkError:
        pass
    logs.buf.append("line 3\n")  # written while the AM was away
    bg.ship_logs()
    assert am.got == ["line 1\nline 2\nline 3\n"]  # nothing lost, nothing twice, in order
