"""Spares started as the extension loads (launcher/localwarm.py ``on_load``): a kernel's first local
job runs in them; ``TONY_JUPYTER_WARM_ON_LOAD=0``, ``TONY_JUPYTER_WARM=0`` or a YARN default
backend start none. Real processes, no timings."""

import time

import psutil
import pytest
from helpers.jobs import FAST, wait_no_processes

import tony_jupyter
from tony_jupyter.launcher import localwarm as spare_am
from tony_jupyter.launcher.client import list_jobs

FIRST = "import os\npid = os.getpid()\n"


@pytest.fixture(autouse=True)
def _spares_at_load(monkeypatch):
    """On, as a user gets it (tests/conftest.py turns it off for the rest of the suite)."""
    monkeypatch.delenv("TONY_JUPYTER_WARM_ON_LOAD", raising=False)


def _loaded(shell) -> tuple[int, list[int]] | None:
    """Load the extension as a kernel does; the spare AM it started in the background and its
    spare executors' pids, once all are up (None: none was started)."""
    spare_am.discard()
    tony_jupyter.load_ipython_extension(shell)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        timer = spare_am._timer
        if timer is not None:
            timer.join()
        s = spare_am.current()
        if s is None and (timer is None or not timer.is_alive()):
            return None
        if s is not None:
            kids = psutil.Process(s.proc.pid).children()
            if len(kids) == spare_am.ON_LOAD_EXECUTORS:
                return s.proc.pid, [p.pid for p in kids]
        time.sleep(0.05)
    raise AssertionError("the spare AM started at load did not come up")


def test_a_kernels_first_job_runs_in_the_spares_started_at_load(shell, tony_home):
    loaded = _loaded(shell)
    assert loaded is not None
    am, executors = loaded
    try:
        shell.run_cell_magic("tony", f"--workers 2 {FAST} --pull pid", FIRST)
    finally:
        spare_am.discard()
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == am
    assert shell.user_ns["pid"] in executors
    assert wait_no_processes(tony_home) == []


@pytest.mark.parametrize(
    "var, value",
    [("TONY_JUPYTER_WARM_ON_LOAD", "0"), ("TONY_JUPYTER_WARM", "0"), ("HADOOP_CONF_DIR", "/x")],
)
def test_no_spares_at_load_when_turned_off_or_not_local(shell, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    assert _loaded(shell) is None
    assert spare_am.current() is None
