"""What a PyTorch or JAX job may not ask for is refused in the notebook, naming the fix, before
anything is submitted: a framework this kernel's environment lacks, --procs-per-task above the
GPUs asked for, a malformed or upside-down --workers MIN:MAX, TensorFlow-only task types."""

import importlib.util

import pytest
from helpers.jobs import assert_refused_before_submission, processes_under
from IPython.core.error import UsageError

from tony_jupyter.core.errors import SpecError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.options import parse_job_args


@pytest.mark.parametrize(
    "line,message",
    [
        (
            "--framework pytorch --workers 2 --gpus 1 --procs-per-task 2",
            "--procs-per-task 2 is above the 1 GPU(s) each worker task asks for: each process "
            "drives one GPU (its LOCAL_RANK); ask for --gpus 2, or --procs-per-task 1",
        ),
        (
            "--framework jax --workers 2 --procs-per-task 2",
            "--procs-per-task is for PyTorch jobs (torchrun's --nproc-per-node)",
        ),
        ("--workers 2:x", "--workers takes N or MIN:MAX (whole numbers, e.g. 2:4), not '2:x'"),
        ("--workers :3", "--workers takes N or MIN:MAX"),
        ("--workers 4:2", "--workers 4:2: MIN (4) is above MAX (2); write --workers 2:4"),
        ("--workers 0:2", "--workers 0:2: MIN and MAX must be at least 1"),
        (
            "--workers 2:4",
            "--workers 2:4: elastic jobs run under PyTorch's elastic agent",
        ),
        (
            "--framework pytorch --workers 2 --ps 1",
            "a PyTorch job has no ps tasks (parameter servers and the evaluator are "
            "TensorFlow's roles)",
        ),
        ("--framework jax --chief --evaluator", "a JAX job has no evaluator tasks"),
        ("--framework mxnet", "MXNet is retired by Apache; out of scope"),
    ],
)
def test_bad_framework_input_is_a_usage_error_and_submits_nothing(shell, tony_home, line, message):
    assert_refused_before_submission(shell, tony_home, line, message)


@pytest.mark.parametrize(
    "framework,missing,fix", [("pytorch", "torch", "pip install torch"), ("jax", "jaxlib", "jax")]
)
def test_a_framework_missing_from_the_kernels_environment_is_named_with_the_fix(
    shell, tony_home, monkeypatch, framework, missing, fix
):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a)
    )
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", f"--backend local --framework {framework} --workers 2", "1")
    message = str(e.value)
    assert f"--framework {framework}: {missing} is not installed in this kernel's environment" in (
        message
    )
    assert fix in message and "tony-jupyter[frameworks]" in message
    assert list_jobs() == [] and processes_under(tony_home) == []


def test_tasks_in_another_environment_are_not_judged_by_the_kernels(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    with pytest.raises(SpecError, match="torch is not installed"):
        parse_job_args("--backend yarn --framework pytorch")
    # --python: the tasks run a Python on the nodes, which only the tasks can check
    _, spec = parse_job_args("--backend yarn --framework pytorch --python /opt/py/bin/python")
    assert spec.framework == "pytorch"


def test_a_fixed_range_is_a_count_and_cpu_tasks_may_run_several_processes():
    _, spec = parse_job_args("--framework pytorch --workers 3:3 --procs-per-task 2")
    assert [(t.type, t.instances) for t in spec.tasks] == [("worker", 3)]
    assert spec.procs_per_task == 2
    _, spec = parse_job_args("--framework pytorch --workers 2 --gpus 4 --procs-per-task 4")
    assert spec.procs_per_task == 4
    # a TensorFlow job neither needs torch nor tf-keras checks for PyTorch
    assert parse_job_args("--workers 1")[1].framework == "tensorflow"


def test_a_session_is_refused_several_processes_per_task(shell, tony_home):
    with pytest.raises(UsageError) as e:
        shell.run_line_magic(
            "tony", "session start --backend local --framework pytorch --procs-per-task 2"
        )
    assert "--procs-per-task does not apply to a session yet" in str(e.value)
    assert list_jobs() == [] and processes_under(tony_home) == []
