"""supervise.py: start with a readiness probe, stop as TERM then KILL of the whole group (a
grandchild included), and re-attach by pid and start time (a recycled pid is refused)."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import psutil

from tony_jupyter.core import supervise
from tony_jupyter.core.supervise import ProcRecord

PY = sys.executable


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_start_waits_for_a_port_and_logs_output(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = (
        "import socket, time; print('listening', flush=True); time.sleep(0.3); "
        f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(60)"
    )
    log = tmp_path / "out.log"
    proc = supervise.start([PY, "-c", server], log=log)
    try:
        assert proc.own_group and os.getpgid(proc.pid) == proc.pid  # its own group
        assert proc.wait_ready(supervise.port_open("127.0.0.1", port), timeout=20)
        assert proc.poll() is None
        assert "listening" in log.read_text()
    finally:
        proc.stop(grace=1)
    assert proc.returncode == -15  # it took the TERM


def test_wait_ready_tells_an_exit_from_a_timeout(tmp_path):
    never = supervise.file_exists(tmp_path / "never")
    dies = supervise.start([PY, "-c", "import sys; sys.exit(3)"])
    began = time.monotonic()
    assert not dies.wait_ready(never, timeout=30)
    assert dies.poll() == 3 and time.monotonic() - began < 10  # not the whole timeout
    slow = supervise.start([PY, "-c", "import time; time.sleep(60)"])
    try:
        assert not slow.wait_ready(never, timeout=0.3)
        assert slow.poll() is None  # still running: it timed out
    finally:
        slow.stop(grace=1)
    ready = tmp_path / "ready"
    writes = supervise.start([PY, "-c", f"open({str(ready)!r}, 'w'); import time; time.sleep(60)"])
    try:
        assert writes.wait_ready(supervise.file_exists(ready), timeout=20)
    finally:
        writes.stop(grace=1)


IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "


def test_stop_kills_a_group_that_ignores_term_grandchild_included(tmp_path):
    pids = tmp_path / "grandchild.pid"
    # The leader starts a child that starts a grandchild; all three ignore TERM.
    grandchild = IGNORES_TERM + "time.sleep(120)"
    child = (
        IGNORES_TERM + "import subprocess, sys; "
        f"g = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
        f"open({str(pids)!r}, 'w').write(str(g.pid)); time.sleep(120)"
    )
    leader = (
        IGNORES_TERM
        + "import subprocess, sys; "
        + f"subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(120)"
    )
    proc = supervise.start([PY, "-c", leader])
    grandchild_pid = int(_wait_for(pids))
    assert os.getpgid(grandchild_pid) == proc.pid
    began = time.monotonic()
    code = proc.stop(grace=0.5)
    assert code == -9  # TERM was ignored: KILL
    assert time.monotonic() - began >= 0.5  # TERM first, its grace waited out
    deadline = time.monotonic() + 5
    while not _gone(grandchild_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild_pid)


def test_stop_kills_what_the_leader_left_in_its_group(tmp_path):
    """The leader exits at TERM; a grandchild that ignores it is KILLed with the group."""
    pids = tmp_path / "left.pid"
    stray = IGNORES_TERM + "time.sleep(120)"
    leader = (
        "import subprocess, sys, time; "
        f"g = subprocess.Popen([sys.executable, '-c', {stray!r}]); "
        f"open({str(pids)!r}, 'w').write(str(g.pid)); time.sleep(120)"
    )
    proc = supervise.start([PY, "-c", leader])
    stray_pid = int(_wait_for(pids))
    time.sleep(0.3)  # its SIG_IGN is in place
    assert proc.stop(grace=5) == -15
    deadline = time.monotonic() + 5
    while not _gone(stray_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(stray_pid)


def test_a_process_in_its_parents_group_is_signalled_alone():
    proc = supervise.start([PY, "-c", "import time; time.sleep(60)"], own_group=False)
    assert os.getpgid(proc.pid) == os.getpgid(0)  # ours: stop must not signal our group
    assert proc.stop(grace=5) == -15
    assert proc.stop(grace=5) == -15  # again: nothing to signal, nothing raised


def test_a_record_reattaches_its_process_and_refuses_a_recycled_pid(tmp_path):
    proc = supervise.start([PY, "-c", "import time; time.sleep(60)"])
    try:
        path = tmp_path / "x.pid"
        proc.record().write(path)
        rec = ProcRecord.read(path)
        assert rec is not None and rec.pid == proc.pid
        found = rec.attach()
        assert found is not None and found.pid == proc.pid
        # The same pid, started at another time: another process that got the pid.
        recycled = ProcRecord(proc.pid, rec.created - 3600)
        assert recycled.attach() is None
        assert ProcRecord.loads(recycled.dumps()) == recycled
    finally:
        proc.stop(grace=1)
    assert rec.attach() is None  # gone
    assert ProcRecord.loads("123") is None and ProcRecord.loads("x y") is None
    assert ProcRecord.read(tmp_path / "missing.pid") is None
