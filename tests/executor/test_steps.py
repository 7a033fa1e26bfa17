"""The executor's steps, each called on its own: register (the task's own token; an attempt
that is over; an AM no one serves), prepare (the framework's and TonY's variables, the chief's
TB_PORT, the shipped directory), run_cell (a typed outcome and the exit code, for a value, a
failure and a SystemExit) and report (the final progress, then the outcome's wire form). A
stand-in AM on 127.0.0.1 records what each step sends."""

from __future__ import annotations

import base64
import json
import os
import pickle
import socket
from http.server import BaseHTTPRequestHandler

import cloudpickle
import pytest
from helpers.fakehttp import serving

from tony_jupyter.core.bundle import BundleInfo
from tony_jupyter.core.jobdir import JobDir
from tony_jupyter.core.protocol import CellOutcome, ExecutorEnv
from tony_jupyter.executor import main as steps
from tony_jupyter.executor.link import AMLink

SPEC = {"chief": ["h0:1000"], "worker": ["h1:1001", "h2:1002"]}


class StandInAM(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept alive, as the AM's tornado
    seen: list[tuple[str, str, dict]] = []
    status = 200

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        route = self.path.rsplit("/api/v1/", 1)[1]
        type(self).seen.append((route, self.headers["Authorization"], body))
        answer: dict = {"token": "t" * 43} if route == "executor/register" else {"ok": True}
        if type(self).status != 200:
            answer = {"error": "attempt 1 is over"}
        data = json.dumps(answer).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def am_url():
    StandInAM.seen, StandInAM.status = [], 200
    with serving(StandInAM) as url:
        yield url


def executor_env(am_url: str, tmp_path, task_id: str = "worker:1", **kw) -> ExecutorEnv:
    return ExecutorEnv(
        am_url=am_url,
        token="s" * 32,
        task_id=task_id,
        attempt=2,
        chief="chief:0",
        bundle_dir=str(tmp_path),
        executor_host="127.0.0.1",
        **kw,
    )


def bundle(tmp_path, source: str, pull: tuple[str, ...] = (), **names) -> None:
    jobdir = JobDir(tmp_path)
    jobdir.cell.write_text(source)
    jobdir.names.write_bytes(pickle.dumps(names))
    BundleInfo(pull=pull).write(jobdir.bundle)


def registered(am_url: str, tmp_path, task_id: str = "worker:1", **kw) -> steps.Registered:
    env = executor_env(am_url, tmp_path, task_id, **kw)
    return steps.Registered(env, AMLink(am_url, "t" * 43, task_id, 2), "127.0.0.1")


def test_register_trades_the_launch_secret_for_the_tasks_own_token(am_url, tmp_path):
    task = steps.register(executor_env(am_url, tmp_path))
    ((route, auth, body),) = StandInAM.seen
    assert route == "executor/register" and auth == "Bearer " + "s" * 32
    assert body["task"] == "worker:1" and body["attempt"] == 2 and body["pid"] == os.getpid()
    assert body["host"] == "127.0.0.1" and body["port"] > 0
    assert task.am.token == "t" * 43 and task.host == "127.0.0.1" and not task.is_chief


def test_register_ends_the_task_when_its_attempt_is_over(am_url, tmp_path):
    StandInAM.status = 410
    with pytest.raises(steps.TaskExit) as e:
        steps.register(executor_env(am_url, tmp_path))
    assert e.value.code == 143


def test_register_names_an_am_no_one_serves(tmp_path, capsys):
    with socket.socket() as s:  # a port that was free a moment ago: refused now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(steps.TaskExit) as e:
        steps.register(executor_env(f"http://127.0.0.1:{port}", tmp_path))
    assert e.value.code == steps.UNREACHABLE
    assert f"cannot reach the job's AM at 127.0.0.1:{port}" in capsys.readouterr().err


def test_prepare_sets_the_frameworks_and_tonys_variables(am_url, tmp_path, monkeypatch):
    bundle(tmp_path, "1")
    monkeypatch.chdir(tmp_path)
    environ: dict[str, str] = {}
    prepared = steps.prepare(registered(am_url, tmp_path), SPEC, environ)
    tf_config = json.loads(environ["TF_CONFIG"])
    assert tf_config["task"] == {"type": "worker", "index": 1}
    assert tf_config["cluster"] == SPEC
    assert environ["JOB_NAME"] == "worker" and environ["TASK_INDEX"] == "1"
    assert environ["IS_CHIEF"] == "false" and "TB_PORT" not in environ
    assert prepared.cluster_spec == SPEC and prepared.src is None  # nothing shipped


def test_prepare_gives_the_chief_a_tensorboard_port(am_url, tmp_path, monkeypatch):
    bundle(tmp_path, "1")
    monkeypatch.chdir(tmp_path)
    environ: dict[str, str] = {}
    steps.prepare(registered(am_url, tmp_path, "chief:0", tensorboard=False), SPEC, environ)
    assert environ["IS_CHIEF"] == "true" and int(environ["TB_PORT"]) > 0


def test_prepare_for_pytorch_gives_torchruns_variables(am_url, tmp_path, monkeypatch):
    bundle(tmp_path, "1")
    monkeypatch.chdir(tmp_path)
    environ: dict[str, str] = {}
    task = registered(am_url, tmp_path, "worker:0", framework="pytorch")
    steps.prepare(task, {"worker": ["h1:1001", "h2:1002"]}, environ)
    assert environ["RANK"] == "0" and environ["WORLD_SIZE"] == "2"
    assert environ["MASTER_ADDR"] == "h1" and environ["MASTER_PORT"] == "1001"
    assert "TF_CONFIG" not in environ


@pytest.fixture
def clean_main(monkeypatch):
    """run_cell makes the cell __main__, as ``python script.py`` would: put the test's back."""
    import sys

    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    monkeypatch.delenv(ExecutorEnv.var("checkpoint_dir"), raising=False)


def test_run_cell_gives_the_chiefs_value_and_pulled_names(am_url, tmp_path, clean_main):
    bundle(tmp_path, "y = x * 2\ny + 1", pull=("y", "nope"), x=20)
    task = registered(am_url, tmp_path, "chief:0")
    finished = steps.run_cell(steps.Prepared(task, SPEC, None))
    assert finished.code == 0 and isinstance(finished.outcome, CellOutcome)
    assert finished.outcome.ok and finished.outcome.value is not None
    got = cloudpickle.loads(base64.b64decode(finished.outcome.value))
    assert got == {"value": 41, "pulled": {"y": 40}, "missing": ["nope"]}


def test_run_cell_of_a_worker_sends_no_value(am_url, tmp_path, clean_main):
    bundle(tmp_path, "41", pull=("x",), x=1)
    finished = steps.run_cell(steps.Prepared(registered(am_url, tmp_path), SPEC, None))
    assert finished == steps.Finished(CellOutcome("ok"), 0)


def test_run_cell_reports_a_failure_with_its_traceback(am_url, tmp_path, clean_main, capsys):
    bundle(tmp_path, "def f():\n    raise ValueError('bad batch')\nf()")
    finished = steps.run_cell(steps.Prepared(registered(am_url, tmp_path), SPEC, None))
    assert finished.code == 1 and finished.outcome.status == "error"
    assert "ValueError: bad batch" in (finished.outcome.traceback or "")
    assert "ValueError: bad batch" in capsys.readouterr().err  # the task's log has it too


@pytest.mark.parametrize(
    ("source", "code", "outcome"),
    [
        ("raise SystemExit(3)", 3, CellOutcome("error", "SystemExit: 3")),
        ("import sys\nsys.exit()", 0, CellOutcome("ok")),
        ("raise SystemExit('done badly')", 1, CellOutcome("error", "SystemExit: done badly")),
    ],
)
def test_run_cell_takes_a_system_exits_code(am_url, tmp_path, clean_main, source, code, outcome):
    bundle(tmp_path, source)
    finished = steps.run_cell(steps.Prepared(registered(am_url, tmp_path), SPEC, None))
    assert finished == steps.Finished(outcome, code)


def test_report_sends_the_final_progress_then_the_outcome(am_url, tmp_path, monkeypatch):
    monkeypatch.setattr(steps.runtime, "current_progress", lambda: {"step": 7})
    task = registered(am_url, tmp_path)
    finished = steps.Finished(CellOutcome("error", "Traceback: boom"), 1)
    assert steps.report(task, finished) == 1
    (beat_route, auth, beat), (result_route, _, result) = StandInAM.seen
    assert beat_route == "executor/heartbeat" and auth == "Bearer " + "t" * 43
    assert beat["progress"] == {"step": 7}
    assert result_route == "executor/result"
    assert result == {"task": "worker:1", "attempt": 2, "status": "error",
                      "traceback": "Traceback: boom"}  # fmt: skip


def test_report_fails_a_task_whose_outcome_did_not_reach_the_am(am_url, tmp_path, capsys):
    StandInAM.status = 500
    task = registered(am_url, tmp_path)
    assert steps.report(task, steps.Finished(CellOutcome("ok"), 0)) == 1
    assert "could not send the result" in capsys.readouterr().err
