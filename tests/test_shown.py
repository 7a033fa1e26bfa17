"""What tony-jupyter prints or keeps of others' text (issue 42, findings 2, 3 and 6): a URL's
credentials redacted everywhere (a task's log, doctor's report, a traceback), terminal control
characters replaced in what the CLI and the magics print, MLflow's start within a stated
budget, and a local task without the notebook side's own variables."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest
from helpers.jobs import wait_no_processes

from tests.am.test_coordinator import make, register_all
from tony_jupyter import commands
from tony_jupyter.core import hostenv
from tony_jupyter.core.shown import redacted, terminal_safe
from tony_jupyter.executor import mlflow_run
from tony_jupyter.launcher.doctor import doctor

SECRET = "S3CRET-pw"
URI = f"http://alice:{SECRET}@127.0.0.1:{{port}}/"
ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;title\x07\x9b31m\rhidden"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (f"http://alice:{SECRET}@host/x", "http://alice:[redacted]@host/x"),
        ("https://TOKEN123@github.com/o/r", "https://[redacted]@github.com/o/r"),
        (f"to HTTPS://u:{SECRET}@h:5000 failed", "to HTTPS://u:[redacted]@h:5000 failed"),
        (f"x=postgresql+psycopg2://u:{SECRET}@db/x", "x=postgresql+psycopg2://u:[redacted]@db/x"),
        (
            "mail alice@example.com, http://host:80/a@b",
            "mail alice@example.com, http://host:80/a@b",
        ),
    ],
)
def test_a_urls_credentials_are_redacted(text, want):
    assert redacted(text) == want


def test_terminal_output_keeps_newlines_and_tabs_only():
    got = terminal_safe(f"a\tb\n{ESCAPES}\r\nend http://u:{SECRET}@h/")
    assert got == (
        "a\tb\n\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;title\\x07\\x9b31m\nhidden\n"
        "end http://u:[redacted]@h/"
    )
    assert not any(ord(c) < 32 and c not in "\n\t" for c in got)


def test_what_the_cli_and_magics_print_goes_through_one_sanitizer(capsys):
    commands.show(f"job \x1b[2J{ESCAPES} http://u:{SECRET}@h/")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and SECRET not in out and "\\x1b[2J" in out


def test_a_tasks_log_and_traceback_keep_no_url_password(tmp_path):
    c, _, _ = make("--workers 1 --no-tensorboard", tmp_path)
    register_all(c)
    c.add_logs("worker:0", 1, f"MLflow: API request to http://alice:{SECRET}@h/api failed\n")
    c.set_result("worker:0", 1, {"status": "error", "traceback": f"at https://{SECRET}@h/"})
    assert SECRET not in c.log_path("worker:0").read_text()
    assert SECRET not in c.tasks["worker:0"].traceback
    assert SECRET not in str(c.snapshot_json())


def test_doctor_never_prints_the_tracking_uris_password(tony_home, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", URI.format(port=closed_port()))
    report, ok = doctor(["--no-probe"])
    assert not ok and "mlflow tracking" in report
    assert SECRET not in report and "alice:[redacted]@127.0.0.1" in report


def test_mlflow_start_waits_no_longer_than_its_stated_budget(tmp_path, monkeypatch, capfd):
    pytest.importorskip("mlflow")
    from mlflow.tracking._tracking_service import utils

    monkeypatch.setattr(utils, "_tracking_uri", None)  # from the environment, as in a task
    with socket.socket() as s:  # a server that takes the connection and never answers
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", URI.format(port=s.getsockname()[1]))
        monkeypatch.setattr(mlflow_run, "START_BUDGET_S", 1.0)
        (tmp_path / "spec.json").write_text('{"name": "j"}')
        assert mlflow_run.Run.start(tmp_path, "job1", 1) is None
    out = capfd.readouterr().out
    assert "starting the job's MLflow run at http://alice:[redacted]@127.0.0.1" in out
    assert "(up to 1 s)" in out and "did not answer within 1 s" in out and SECRET not in out


def test_an_mlflow_run_that_starts_after_the_budget_is_ended_not_left_running(
    tmp_path, monkeypatch, capfd
):
    pytest.importorskip("mlflow")
    ended, started = [], threading.Event()

    class LateMlflow:
        def end_run(self, status):
            ended.append(status)

    def late_start(cls, bundle_dir, job_id, attempt):
        time.sleep(0.6)  # the server answers after the budget
        started.set()
        return mlflow_run.Run(LateMlflow(), "run-late")

    monkeypatch.setattr(mlflow_run, "START_BUDGET_S", 0.2)
    monkeypatch.setattr(mlflow_run.Run, "_start", classmethod(late_start))
    assert mlflow_run.Run.start(tmp_path, "job1", 1) is None
    assert ended == []  # given up, the start still under way
    assert started.wait(5)
    # the starting thread ends the run, then says so: wait for the saying, not only the end
    out, deadline = "", time.monotonic() + 5
    while "started late" not in out and time.monotonic() < deadline:
        out += capfd.readouterr().out
        time.sleep(0.02)
    assert ended == ["KILLED"]
    assert "did not answer within 0 s" in out and "run-late started late: ended (KILLED)" in out


def test_a_local_task_gets_none_of_the_notebook_sides_own_variables_unless_asked():
    host = {"PATH": "/bin", "TONY_JUPYTER_HOME": "/h", "MLFLOW_TRACKING_TOKEN": "t",
            "MLFLOW_TRACKING_PASSWORD": "p", "MLFLOW_TRACKING_URI": "http://h/",
            "JUPYTER_TOKEN": "j"}  # fmt: skip
    assert hostenv.for_task(host, {"TONY_TASK_ID": "worker:0"}) == {
        "PATH": "/bin", "MLFLOW_TRACKING_URI": "http://h/", "TONY_TASK_ID": "worker:0"
    }  # fmt: skip
    asked = hostenv.for_task(host, {"MLFLOW_TRACKING_TOKEN": "t"})  # --env MLFLOW_TRACKING_TOKEN
    assert asked["MLFLOW_TRACKING_TOKEN"] == "t" and "TONY_JUPYTER_HOME" not in asked


def test_a_tasks_output_reaches_the_terminal_safe_and_without_secrets(tony_home, tmp_path):
    """The one real case: a job whose task prints escapes and a URL's password, and whose
    MLflow server is unreachable, through `tony-jupyter submit` and `logs`."""
    script = tmp_path / "job.py"
    script.write_text(
        "import os\n"
        "print('home', os.environ.get('TONY_JUPYTER_HOME'),"
        " 'pw', os.environ.get('MLFLOW_TRACKING_PASSWORD'))\n"
        f"print({ESCAPES!r} + ' http://alice:{SECRET}@example.invalid/')\n"
    )
    env = {
        **hostenv.without_jupyter(dict(__import__("os").environ)),
        "MLFLOW_TRACKING_URI": URI.format(port=closed_port()),
        "MLFLOW_TRACKING_PASSWORD": SECRET,
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    }

    def cli(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "tony_jupyter.cli", *args],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip
        return r.stdout + r.stderr

    out = cli("submit", str(script), "--workers", "1")
    job_id = out.split("submitted ")[1].split()[0]
    logs = cli("logs", job_id, "worker:0")
    for text in (out, logs, cli("list"), cli("status", job_id)):
        assert SECRET not in text
        assert not any(ord(c) < 32 and c not in "\n\t" for c in text), repr(text[-400:])
    assert "home None pw None" in logs  # the notebook side's own: not the task's
    assert "\\x1b]52;c;ZXZpbA==\\x07" in logs and "alice:[redacted]@example.invalid" in logs
    assert "starting the job's MLflow run at http://alice:[redacted]@127.0.0.1" in logs
    assert "no MLflow run" in logs
    assert wait_no_processes(tony_home) == []
