"""Careless input is refused in the notebook, with the numbers and the fix, before anything is
submitted: task counts the local machine cannot hold, nan timeouts, sub-megabyte memory,
TONY_* variables in the task environment, an unclosed quote in a line magic."""

import dataclasses
from pathlib import Path

import pytest
from helpers.jobs import assert_refused_before_submission
from IPython.core.error import UsageError

from tony_jupyter.am.main import executor_env
from tony_jupyter.errors import SpecError
from tony_jupyter.launcher.local import check_capacity
from tony_jupyter.options import parse_job_args


@pytest.mark.parametrize(
    "line,message",
    [
        ("--workers 100000", "asks for 100000 tasks, one process each"),
        ("--timeout nan", "--timeout must be a positive number of seconds, not nan"),
        ("--timeout inf", "--timeout must be a positive number of seconds, not inf"),
        ("--memory 0.5", "'0.5' is less than 1 MB (a number without a unit is megabytes"),
        ("--conf tony.containers.envs=TONY_TOKEN=x", "TONY_TOKEN is tony-jupyter's own"),
        ("--conf tony.execution.envs=A=1,tony_am_url=x", "tony_am_url is tony-jupyter's own"),
    ],
)
def test_bad_input_is_a_usage_error_and_submits_nothing(shell, tony_home, line, message):
    assert_refused_before_submission(shell, tony_home, line, message)


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


def test_the_am_never_lets_the_spec_override_tony_variables(tmp_path: Path):
    _, spec = parse_job_args("--backend local --workers 1")
    spec = dataclasses.replace(spec, env=(("TONY_TOKEN", "evil"), ("MINE", "1")))
    env = executor_env("job", spec, "http://127.0.0.1:1", tmp_path)
    # TONY_TOKEN is each launch's registration secret, set by the coordinator: not the spec's.
    assert "TONY_TOKEN" not in env and env["MINE"] == "1"
    assert env["TONY_AM_URL"] == "http://127.0.0.1:1"
