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
