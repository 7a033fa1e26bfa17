import importlib.util
import os
import signal
from pathlib import Path

import psutil
import pytest

if importlib.util.find_spec("tony_jupyter.devcluster.testing"):
    pytest_plugins = ["tony_jupyter.devcluster.testing"]


def processes_under(home: Path) -> list[psutil.Process]:
    """Processes (AMs, executors) that belong to jobs staged under ``home``."""
    found = []
    for p in psutil.process_iter(["cmdline", "cwd", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue  # exited; only its parent's bookkeeping is left
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
    # An AM exits within moments of being released; anything still there after that is a leak.
    left = wait_no_processes(home, timeout=10)
    for p in left:
        p.kill()
    assert not left, f"processes left behind: {left}"


def wait_no_processes(home: Path, timeout: float = 15.0) -> list:
    import time

    deadline = time.monotonic() + timeout
    while (left := processes_under(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture
def shell(tony_home):
    """An IPython shell with the extension loaded (the same magics a notebook gets)."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "tony_jupyter")
    yield ip


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
# dev/test runs one pytest in the background (`&`), where bash starts it with SIGINT ignored and
# Python then keeps it ignored: the tests that press Ctrl-C need KeyboardInterrupt back.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _server_base_url_does_not_leak(monkeypatch):
    """The server extension writes the server's base_url into os.environ (kernels inherit it);
    an in-process server test must not hand its base_url to the tests after it."""
    monkeypatch.setenv("TONY_JUPYTER_BASE_URL", "/")


def run_notebook(path: Path, cwd: Path, timeout: int = 600):
    """Execute a notebook headless (nbclient) in ``cwd``; returns it, asserting no cell failed.

    "python3" is the kernel of the interpreter running the tests (the project's venv); the
    kernel inherits this process's environment.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, kernel_name="python3", timeout=timeout, resources={"metadata": {"path": str(cwd)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    return nb
