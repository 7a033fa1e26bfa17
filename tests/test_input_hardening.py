"""Careless input is refused in the notebook, with the numbers and the fix, before anything is
submitted: task counts the local machine cannot hold, nan timeouts, sub-megabyte memory,
TONY_* variables in the task environment, an unclosed quote in a line magic."""

import dataclasses
from pathlib import Path

import pytest
from helpers.jobs import assert_refused_before_submission, processes_under
from IPython.core.error import UsageError

from tony_jupyter.am.main import executor_env
from tony_jupyter.core.errors import SpecError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.local import check_capacity
from tony_jupyter.options import parse_job_args


@pytest.mark.parametrize(
    "line,message",
    [
        ("--workers 100000", "asks for 100000 tasks, one process each"),
        ("--timeout nan", "--timeout: expected a number (digits 0-9), got 'nan'"),
        ("--timeout inf", "--timeout: expected a number (digits 0-9), got 'inf'"),
        ("--timeout 1e400", "--timeout: expected a finite number, got '1e400'"),
        ("--timeout 1e12", "--timeout: must be a positive number of seconds, at most 3.16224e+07"),
        ("--timeout \uff11\uff12", "--timeout: expected a number (digits 0-9)"),
        ("--memory 0.5", "'0.5' is less than 1 MB (a number without a unit is megabytes"),
        ("--memory " + "9" * 400, "is more memory than YARN can ask for (at most 2147483647 MB)"),
        ("--memory \uff12g", "malformed size '\uff12g'; write a number with a unit (digits 0-9)"),
        ("--conf tony.worker.memory=" + "9" * 400 + "g", "tony.worker.memory: '9999999999999"),
        ("--workers \uff12", "--workers: expected a whole number (digits 0-9), got '\uff12'"),
        ("--workers " + "9" * 400, "--workers: expected a whole number (digits 0-9), got '999"),
        ("--workers 1:\u0662", "(MAX: expected a whole number (digits 0-9), got '\u0662')"),
        ("--vcores 1_0", "--vcores: expected a whole number (digits 0-9), got '1_0'"),
        ("--conf tony.worker.instances=\uff12", "tony.worker.instances: expected a whole number"),
        ("--conf tony.worker.gpus=" + "9" * 20, "tony.worker.gpus: must be at most 2147483647"),
        ("--conf tony.application.timeout=" + "9" * 400, "tony.application.timeout: expected"),
        ("--conf tony.application.timeout=" + "9" * 15, "tony.application.timeout: must be at"),
        ("--conf tony.task.registration-timeout-sec=" + "9" * 12, "must be at most 31622400"),
        ("--conf tony.task.heartbeat-interval-ms=" + "9" * 12, "must be at most 3600000"),
        ("--conf tony.task.max-missed-heartbeats=" + "9" * 12, "must be at most 1000000"),
        ("--conf tony.containers.envs=A=x\0y", "holds a NUL character, which no environment"),
        ("--conf tony.containers.envs=A\0B=1", "holds a NUL character"),
        ("--conf tony.containers.envs=TONY_TOKEN=x", "TONY_TOKEN is tony-jupyter's own"),
        ("--conf tony.execution.envs=A=1,tony_am_url=x", "tony_am_url is tony-jupyter's own"),
        # issue 42, finding 4: processes, not tasks
        ("--framework pytorch --workers 1 --procs-per-task 100000", "100000 is above 64, the most"),
        ("--framework pytorch --workers 1 --procs-per-task 65", "ask for more tasks (--workers N)"),
        ("--framework pytorch --workers 8 --procs-per-task 64", "asks for 512 processes (8 tasks"),
    ],
)
def test_bad_input_is_a_usage_error_and_submits_nothing(shell, tony_home, line, message):
    assert_refused_before_submission(shell, tony_home, line, message)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "\uff13\uff10", "1e999"])
def test_a_sessions_idle_timeout_is_a_finite_positive_number(shell, tony_home, value):
    with pytest.raises(UsageError) as e:
        shell.run_line_magic("tony", f"session start --idle-timeout {value} --workers 1")
    assert "--idle-timeout" in str(e.value)
    assert list_jobs() == [] and processes_under(tony_home) == []


@pytest.mark.parametrize("words", ["status", "logs", "kill", "attach"])
def test_a_very_long_job_id_is_a_usage_error(shell, tony_home, words):
    with pytest.raises(UsageError) as e:
        shell.run_line_magic("tony", f"{words} {'x' * 5000}")
    assert "is not a job id (up to 128 letters, digits, _ and -)" in str(e.value)
    assert "x" * 100 not in str(e.value)  # named, not printed whole


def test_an_unclosed_quote_in_a_line_magic_is_a_usage_error(shell, tony_home):
    with pytest.raises(UsageError) as e:
        shell.run_line_magic("tony", 'logs "abc')
    assert "cannot split" in str(e.value) and "No closing quotation" in str(e.value)


def test_the_local_backend_compares_the_ask_with_the_machine():
    _, spec = parse_job_args("--backend local --workers 10 --memory 4g")
    with pytest.raises(SpecError) as e:
        check_capacity(spec, cores=2, memory_mb=16 * 1024)
    assert "asks for 10 tasks" in str(e.value) and "at most 8 run here" in str(e.value)
    with pytest.raises(SpecError) as e:
        check_capacity(spec, cores=16, memory_mb=16 * 1024)
    assert "asks for 40.0 GB" in str(e.value) and "has 16.0 GB" in str(e.value)
    assert "--memory 512m" in str(e.value)
    check_capacity(spec, cores=16, memory_mb=64 * 1024)  # fits


def test_the_local_backend_counts_processes_not_tasks():
    _, spec = parse_job_args("--framework pytorch --workers 2 --procs-per-task 10")
    with pytest.raises(SpecError) as e:
        check_capacity(spec, cores=2, memory_mb=1 << 20)
    assert "asks for 20 processes (2 tasks × --procs-per-task 10)" in str(e.value)
    assert "at most 8 run here" in str(e.value) and "--procs-per-task N" in str(e.value)
    check_capacity(spec, cores=8, memory_mb=1 << 20)  # 20 of at most 32: fits


def test_the_am_never_lets_the_spec_override_tony_variables(tmp_path: Path):
    _, spec = parse_job_args("--backend local --workers 1")
    spec = dataclasses.replace(spec, env=(("TONY_TOKEN", "evil"), ("MINE", "1")))
    env = executor_env("job", spec, "http://127.0.0.1:1", tmp_path)
    # TONY_TOKEN is each launch's registration secret, set by the coordinator: not the spec's.
    assert "TONY_TOKEN" not in env and env["MINE"] == "1"
    assert env["TONY_AM_URL"] == "http://127.0.0.1:1"
