"""The warm path of the local backend (core/warmproc.py): a job handed to the kernel's spare
AM and its spare executors behaves as one in fresh processes (environment as the notebook has it
now, cwd, argv, logs, TF_CONFIG), a job whose interpreter-start environment differs starts fresh,
a spare dies with its parent, and a job from spares still stops whole (killed, or Ctrl-C in the
kernel). Real processes, no timings."""

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from helpers.jobs import FAST, Interrupter, submit, tasks_of_the_only_job, wait_no_processes

from tony_jupyter.launcher import local
from tony_jupyter.launcher import localwarm as spare_am
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

CELL = """
import json, os, sys
cfg = json.loads(os.environ["TF_CONFIG"])
print("hello from", cfg["task"]["index"], flush=True)
seen = {
    "task": cfg["task"],
    "workers": len(cfg["cluster"]["worker"]),
    "new": os.environ.get("TONY_TEST_NEW"),
    "gone": "TONY_TEST_GONE" in os.environ,
    "cwd_in_job": os.getcwd().startswith(os.environ["TONY_BUNDLE_DIR"]),
    "cwd": os.path.relpath(os.getcwd(), os.environ["TONY_BUNDLE_DIR"]),
    "argv0": os.path.basename(sys.argv[0]),
    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
    "umask": os.umask(0o022),
    "pid": os.getpid(),
    "ppid": os.getppid(),
}
"""


@pytest.fixture
def spare(shell, monkeypatch):
    """A spare AM with 2 spare executors, ready before the test's job; none left after."""
    monkeypatch.setenv("TONY_TEST_GONE", "1")  # in the spare's start env; removed before the job
    spare_am.discard()
    spare_am.start(2)
    ready = spare_am._spare
    assert ready is not None
    am = psutil.Process(ready.proc.pid)
    deadline = time.monotonic() + 30
    while len(am.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield ready, [p.pid for p in am.children()]
    spare_am.discard()


def run(shell, flags: str = "") -> dict:
    shell.run_cell_magic("tony", f"--workers 2 --pull seen {FAST} {flags}", CELL)
    return shell.user_ns["seen"]


def test_a_job_in_spares_is_the_job_fresh_processes_run(shell, tony_home, spare, monkeypatch):
    ready, executors = spare
    monkeypatch.delenv("TONY_TEST_GONE")
    monkeypatch.setenv("TONY_TEST_NEW", "set after the spare started")
    umask = os.umask(0o027)  # as the notebook could set it, after the spare started
    try:
        warm = run(shell)
    finally:
        os.umask(umask)
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == ready.proc.pid  # the spare AM ran it
    assert warm["pid"] in executors and warm["ppid"] == ready.proc.pid  # in a spare executor
    log = (rec.dir / "logs" / "attempt-1" / "worker-0.stdout").read_text()
    assert "hello from 0" in log
    assert "hello from 1" in (rec.dir / "logs" / "attempt-1" / "worker-1.stdout").read_text()

    spare_am.discard()
    monkeypatch.setenv("TONY_JUPYTER_WARM", "0")
    umask = os.umask(0o027)
    try:
        fresh = run(shell)
    finally:
        os.umask(umask)
    assert fresh["pid"] not in executors and fresh["ppid"] != ready.proc.pid
    for key in ("pid", "ppid"):
        warm.pop(key), fresh.pop(key)
    assert warm == fresh
    assert warm["new"] == "set after the spare started" and warm["gone"] is False
    assert warm["cwd_in_job"] and warm["argv0"] == "__main__.py" and warm["unbuffered"] == "1"
    assert warm["task"] == {"type": "worker", "index": 0} and warm["workers"] == 2
    assert warm["umask"] == 0o027
    assert wait_no_processes(tony_home) == []
    assert not psutil.pid_exists(ready.proc.pid) or ready.proc.poll() is not None


def test_a_pythonpath_job_starts_fresh_and_sees_its_path(shell, tony_home, spare, tmp_path):
    ready, executors = spare
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['TONY_TEST_NEW'] = 'site'\n")
    seen = run(shell, f"--conf tony.containers.envs=PYTHONPATH={site}")
    assert seen["new"] == "site"  # the sitecustomize ran: the interpreter started with the path
    assert seen["pid"] not in executors
    # The AM fitted (the kernel's environment did not change): it ran the job, the spare
    # executors it did not use went away.
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == ready.proc.pid
    assert wait_no_processes(tony_home) == []
    assert psutil.wait_procs([psutil.Process(p) for p in executors if psutil.pid_exists(p)], 10)


def test_a_kernel_pythonpath_change_starts_a_fresh_am(shell, tony_home, spare, monkeypatch):
    ready, _ = spare
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    run(shell)
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) != ready.proc.pid
    ready.proc.wait(10)  # let go: it read EOF and exited
    assert wait_no_processes(tony_home) == []


def test_a_spare_dies_with_its_kernel(tmp_path):
    kernel = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tony_jupyter.launcher import localwarm as spare; import time\n"
            "spare.start(2); print(spare._spare.proc.pid, flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert kernel.stdout is not None
    am = psutil.Process(int(kernel.stdout.readline()))
    deadline = time.monotonic() + 30
    while len(am.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    family = [am, *am.children()]
    assert len(family) == 3
    kernel.kill()
    kernel.wait()
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert alive == []


DAEMON = """
import os, time
pid_file = {pid_file!r}
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(pid_file + ".tmp", "w").write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def test_killing_a_job_from_spares_stops_everything(shell, tony_home, spare, tmp_path):
    ready, executors = spare
    spare_ids = {psutil.Process(p).environ()["TONY_SPARE_ID"] for p in executors}
    pid_file = tmp_path / "daemon.pid"
    client = submit(f"--workers 2 {FAST}", DAEMON.format(pid_file=str(pid_file)), {})
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon = int(pid_file.read_text())
    assert client.am_pid() == ready.proc.pid
    # Forked, not exec'd: its /proc environ is its spare's start env, which names the spare.
    assert psutil.Process(daemon).environ().get("TONY_SPARE_ID") in spare_ids
    os.kill(client.am_pid(), signal.SIGTERM)  # as a Ctrl-C'd or killed job's AM is told
    deadline = time.monotonic() + 30
    while client.snapshot().state != "KILLED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.snapshot().state == "KILLED"
    client.release()
    assert client.wait_am_exit(30)
    assert wait_no_processes(tony_home) == []
    assert not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == "zombie"
    assert not any(psutil.pid_exists(p) for p in executors)


def test_ctrl_c_stops_a_job_running_in_spares(shell, tony_home, spare, monkeypatch):
    ready, executors = spare
    # Strike once the cell has the job: its tasks can run in spares before the submission ends
    # (the next spare is scheduled after the AM serves), and a Ctrl-C there removes the job
    # whole (test_ctrl_c_as_the_job_is_handed_its_spares_leaves_nothing below).
    handed = threading.Event()
    start_am = local.start_am

    def start_am_then_say(*args, **kwargs):
        start_am(*args, **kwargs)
        handed.set()

    monkeypatch.setattr(local, "start_am", start_am_then_say)
    strike = Interrupter(
        lambda: (
            handed.is_set() and [t.state for t in tasks_of_the_only_job()] == ["RUNNING", "RUNNING"]
        )
    )
    with pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic("tony", f"--workers 2 {FAST}", "import time\ntime.sleep(600)")
    assert not strike.missed, f"the tasks never both ran: {strike.last_error}"
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == ready.proc.pid
    client = open_client(rec)
    deadline = time.monotonic() + 30
    while client.snapshot().state == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
    snap = client.snapshot()
    assert snap.state == "KILLED" and "interrupted" in snap.reason, (rec.dir / "am.log").read_text()
    assert wait_no_processes(tony_home) == []
    assert not any(psutil.pid_exists(p) for p in executors)


def test_ctrl_c_as_the_job_is_handed_its_spares_leaves_nothing(
    shell, tony_home, spare, monkeypatch
):
    # The last step of a local submission (the next spare scheduled) comes after the AM
    # serves: a Ctrl-C there, before the cell has the job, must still take it all down.
    ready, executors = spare

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(spare_am, "replenish", interrupted)
    with pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic("tony", f"--workers 2 {FAST}", "import time\ntime.sleep(600)")
    assert list_jobs() == []
    assert wait_no_processes(tony_home) == []
    assert not psutil.pid_exists(ready.proc.pid) or psutil.Process(ready.proc.pid).status() == (
        "zombie"
    )
