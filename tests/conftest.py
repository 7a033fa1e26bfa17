import os
from pathlib import Path

import psutil
import pytest

pytest_plugins = ["tony_jupyter.devcluster.testing"]


def processes_under(home: Path) -> list[psutil.Process]:
    """Processes (AMs, executors) that belong to jobs staged under ``home``."""
    found = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            cwd = p.info["cwd"] or ""
            cmd = " ".join(p.info["cmdline"] or [])
        except (psutil.Error, TypeError):
            continue
        if str(home) in cwd or str(home) in cmd:
            found.append(p)
    return found


@pytest.fixture
def tony_home(tmp_path, monkeypatch):
    """A private TONY_JUPYTER_HOME; after the test, asserts no AM or executor is left."""
    home = tmp_path / "tony-home"
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(home))
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    yield home
    left = processes_under(home)
    for p in left:
        p.kill()
    assert not left, f"processes left behind: {[p.cmdline() for p in left]}"


def wait_no_processes(home: Path, timeout: float = 15.0) -> list:
    import time

    deadline = time.monotonic() + timeout
    while (left := processes_under(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture
def shell(tony_home):
    """An IPython shell with the extension loaded (the same magics a notebook gets)."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "tony_jupyter")
    ip.user_ns.clear()
    yield ip
    ip.user_ns.clear()


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
