"""Where a job came from: the cell id the kernel was sent, the notebook's path, kept in the
job's record (origin.json) and read back typed; and ``%tony result ID`` from another kernel."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from IPython.core.error import UsageError

from tony_jupyter.core import origin
from tony_jupyter.core.origin import JobOrigin
from tony_jupyter.launcher.client import JobRecord


class _Kernel:
    def __init__(self, parent):
        self.parent = parent

    def get_parent(self):
        return self.parent


def test_here_reads_the_cell_id_and_the_notebook(shell, monkeypatch):
    monkeypatch.setattr(shell, "kernel", _Kernel({"metadata": {"cellId": "c-1"}}), raising=False)
    monkeypatch.setenv(origin.SESSION_NAME_ENV, "work/train.ipynb")
    got = origin.here()
    assert (got.cell_id, got.notebook) == ("c-1", "work/train.ipynb") and got.known


@pytest.mark.parametrize("meta", [{}, {"cellId": 7}, {"cellId": "x" * 300}, None])
def test_here_without_a_usable_cell_id_is_unknown(shell, monkeypatch, meta):
    monkeypatch.setattr(shell, "kernel", _Kernel({"metadata": meta}), raising=False)
    monkeypatch.delenv(origin.SESSION_NAME_ENV, raising=False)
    got = origin.here()
    assert got.cell_id == "" and not got.known and got.notebook == ""


def test_the_record_keeps_it_and_names_a_damaged_one(tony_home):
    d = tony_home / "jobs" / "tony_1"
    d.mkdir(parents=True)
    rec = JobRecord("tony_1", d)
    assert rec.origin() is None and not rec.damaged  # an older job: none recorded
    rec.write_origin(JobOrigin("c-1", "a.ipynb", 5.0))
    assert rec.origin() == JobOrigin("c-1", "a.ipynb", 5.0)
    (d / "origin.json").write_text(json.dumps({"cell_id": "x" * 300}))
    assert rec.origin() is None and "origin.json" in rec.damaged


@pytest.mark.usefixtures("backend")
def test_a_submitted_cell_records_its_origin(shell, monkeypatch):
    monkeypatch.setattr(shell, "kernel", _Kernel({"metadata": {"cellId": "c-9"}}), raising=False)
    monkeypatch.setenv(origin.SESSION_NAME_ENV, "nb.ipynb")
    job = shell.run_cell_magic("tony", "--workers 1 --no-tensorboard --async", "1")
    job.wait(120)
    job.client.release()
    got = job.record.origin()
    assert (got.cell_id, got.notebook) == ("c-9", "nb.ipynb") and got.submitted > 0


@pytest.mark.usefixtures("backend")
def test_result_is_collected_by_a_kernel_that_did_not_submit(shell, tony_home):
    job = shell.run_cell_magic(
        "tony", "--workers 1 --no-tensorboard --async --pull answer", "answer = 6 * 7\n'done'"
    )
    job.wait(180)
    # A new process, as a new kernel: nothing of the submitting one but the records.
    code = textwrap.dedent(f"""
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "tony_jupyter")
        value = ip.run_line_magic("tony", "result {job.job_id}")
        print("GOT", value, ip.user_ns["answer"])
    """)
    env = {**os.environ, "TONY_JUPYTER_HOME": str(tony_home)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert "GOT done 42" in out.stdout, out.stdout + out.stderr


def test_result_names_one_job(shell):
    with pytest.raises(UsageError, match="name one job"):
        shell.run_line_magic("tony", "result")
    with pytest.raises(UsageError, match="not a job id|no job"):
        shell.run_line_magic("tony", "result tony_nope")


def test_an_interrupt_followed_by_a_shutdown_is_not_the_users(shell, monkeypatch):
    import threading

    from tony_jupyter.magics import shutting_down

    monkeypatch.setattr(shell, "exit_now", False)
    assert not shutting_down(shell, 0.1)  # the user's Ctrl-C: no shutdown request follows
    threading.Timer(0.1, lambda: setattr(shell, "exit_now", True)).start()
    assert shutting_down(shell, 2.0)  # a restart: ipykernel's shutdown handler sets exit_now
