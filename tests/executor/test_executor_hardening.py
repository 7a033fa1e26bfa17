"""A task's end on the local backend: its last output before a hard exit is kept, nothing it
started outlives it (also a daemon, fork/setsid/fork), and a result too big to travel is
refused with its size named."""

import time
from pathlib import Path

import psutil
import pytest

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.executor import cell
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher.client import JobClient
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args


def run_job(source: str, flags: str = "--workers 1 --no-tensorboard") -> JobClient:
    _, spec = parse_job_args(flags)
    client = open_client(backend_local.submit(spec, make_bundle(source, {})))
    deadline = time.monotonic() + 60
    while client.snapshot().state not in ("SUCCEEDED", "FAILED", "KILLED"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return client


def finish(client: JobClient) -> None:
    client.release()
    assert client.wait_am_exit()


def test_the_last_line_before_a_hard_exit_is_kept(tony_home):
    job = run_job('import os\nprint("last words", flush=True)\nos._exit(3)')
    snap = job.snapshot()
    assert snap.state == "FAILED" and "exited with code 3" in snap.reason
    assert "last words" in job.logs("worker:0")[0]
    stdout = job.record.dir / "logs" / "attempt-1" / "worker-0.stdout"
    assert "last words" in stdout.read_text()
    finish(job)


DAEMON = """
import os, time
pid_file = {pid_file!r}
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pid_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        time.sleep(600)
    os._exit(0)
while not os.path.exists(pid_file):
    time.sleep(0.05)
{end}
"""


@pytest.mark.parametrize("end", ["print('done')", "import os\nos._exit(0)"])
def test_a_daemonised_grandchild_does_not_outlive_the_job(tony_home, tmp_path, end):
    pid_file = str(tmp_path / "daemon.pid")
    job = run_job(DAEMON.format(pid_file=pid_file, end=end))
    assert job.snapshot().state == "SUCCEEDED"
    pid = int(Path(pid_file).read_text())
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, f"the daemon {pid} outlived its job"
    finish(job)


def test_a_result_too_big_to_travel_is_refused_with_its_size(monkeypatch):
    monkeypatch.setattr(cell, "MAX_RESULT_BYTES", 1 << 20)
    with pytest.raises(cell.ResultTooLarge) as e:
        cell.execute("b'x' * (3 << 20)", "<cell>", {}, [], is_chief=True)
    message = str(e.value)
    assert "3.0 MB" in message and "1.0 MB" in message and "file" in message
    small = cell.execute("b'x' * 100", "<cell>", {}, [], is_chief=True)
    assert small.ok and small.value is not None


def test_the_port_is_reserved_on_the_tasks_host_and_the_exposure_documented(monkeypatch):
    import socket
    from pathlib import Path

    from tony_jupyter.executor import ports

    bound = []
    real_bind = socket.socket.bind

    def bind(self, address):
        bound.append(address)
        return real_bind(self, address)

    monkeypatch.setattr(socket.socket, "bind", bind)
    port = ports.reserve_port("127.0.0.1", start=40000)
    assert 40000 - ports.SPAN <= port < 40000  # below the ephemeral range
    assert bound[-2:] == [("", port), ("127.0.0.1", port)]  # every interface, and the task's
    # TensorFlow's server binds every interface anyway: the docs say so, and what to do.
    readme = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    assert "TensorFlow's task servers listen on every interface" in readme
    assert "iptables -A INPUT ! -i lo" in readme


def test_a_port_in_use_is_passed_over_and_a_low_ephemeral_range_gets_the_kernels_pick(
    monkeypatch,
):
    import socket

    from tony_jupyter.executor import ports

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        free = taken + 1 if taken < 65535 else taken - 1
        monkeypatch.setattr(ports.random, "sample", lambda _range, _n: [taken, free])
        assert ports.reserve_port("127.0.0.1", start=65536) == free
    # a range that starts too low to leave SPAN ports above LOWEST; or none readable
    monkeypatch.undo()
    assert ports.reserve_port("127.0.0.1", start=ports.LOWEST + 10) > 0
    assert ports.reserve_port("127.0.0.1", start=None) > 0
    assert ports.ephemeral_start(ports.Path("/nonexistent")) is None
    # a host name that is no address of this host: every interface's check alone
    assert ports.reserve_port("no-such-host.invalid", start=40000) < 40000
