"""%%tony and %tony through a real IPython shell and the real local backend (no TensorFlow:
these jobs are plain Python, so they take well under a second each). The tests that use
``backend`` are the backend contract: they run again with jobs going to the devcluster (marked
``yarn``), whose ``tony_home`` also asserts that no application, container or staging directory
of the test is left."""

import threading
import time

import pytest
from helpers.cells import HANG_WORKER_1
from helpers.jobs import (
    FAST,
    Interrupter,
    processes_under,
    tasks_of_the_only_job,
    wait_no_processes,
)
from IPython.core.error import UsageError

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client


@pytest.mark.usefixtures("backend")
def test_cell_runs_on_every_task_with_tf_config_and_tony_env(shell, tony_home):
    shell.user_ns["offset"] = 40
    value = shell.run_cell_magic(
        "tony",
        f"--workers 2 --ps 1 --pull seen {FAST}",
        """
import json, os
cfg = json.loads(os.environ["TF_CONFIG"])
seen = {k: os.environ[k] for k in ("JOB_NAME", "TASK_INDEX", "TASK_NUM")}
seen["cluster"] = json.loads(os.environ["CLUSTER_SPEC"])
seen["task"] = cfg["task"]
seen["keras"] = os.environ.get("TF_USE_LEGACY_KERAS")
if cfg["task"]["type"] == "ps":
    import time
    time.sleep(600)  # a parameter server never ends by itself; the AM stops it
offset + 2
""",
    )
    assert value == 42
    seen = shell.user_ns["seen"]
    assert seen["task"] == {"type": "worker", "index": 0}
    assert seen["JOB_NAME"] == "worker" and seen["TASK_INDEX"] == "0" and seen["TASK_NUM"] == "2"
    assert sorted(seen["cluster"]) == ["ps", "worker"] and len(seen["cluster"]["worker"]) == 2
    assert seen["keras"] == "1"
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_keras3_opt_out_leaves_tf_use_legacy_keras_unset(shell):
    shell.run_cell_magic(
        "tony",
        "--workers 1 --keras3 --pull k",
        "import os\nk = os.environ.get('TF_USE_LEGACY_KERAS')",
    )
    assert shell.user_ns["k"] is None


@pytest.mark.usefixtures("backend")
def test_failing_worker_raises_with_remote_traceback(shell, tony_home):
    cell = """
import os
if os.environ["TASK_INDEX"] == "1":
    raise ValueError("bad shard 1")
import time
time.sleep(30)
"""
    with pytest.raises(JobFailedError) as e:
        shell.run_cell_magic("tony", f"--workers 2 {FAST}", cell)
    err = e.value
    assert err.state == "FAILED" and err.task == "worker:1"
    assert "worker:1 exited with code 1" in err.reason
    rendered = "\n".join(err._render_traceback_())
    assert "remote traceback from worker:1" in rendered and "ValueError: bad shard 1" in rendered
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    "line,cell,message",
    [
        ("--wrokers 2", "1", "unrecognized arguments: --wrokers"),
        ("--workers 0", "1", "at least one worker"),
        ("--workers -2", "1", "--workers: must be at least 0, got -2"),
        ("--memory 2x", "1", "malformed size '2x'"),
        ("--conf tony.worker.memroy=2g", "1", "did you mean tony.worker.memory?"),
        ("", "x = (\n", "syntax error in the cell at line 1"),
        ("", "undefined_name + 1", "'undefined_name', not defined in the notebook"),
        ("", "lock.acquire()", "cannot ship 'lock'"),
    ],
)
def test_bad_input_is_a_usage_error_and_submits_nothing(shell, tony_home, line, cell, message):
    shell.user_ns["lock"] = threading.Lock()
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", line, cell)
    assert message in str(e.value)
    assert list_jobs() == [] and processes_under(tony_home) == []


def test_yarn_backend_without_hadoop_conf_dir_names_the_missing_configuration(shell, tony_home):
    with pytest.raises(Exception, match="'yarn' backend is not available: HADOOP_CONF_DIR is not"):
        shell.run_cell_magic("tony", "--backend yarn", "1")
    assert list_jobs() == [] and processes_under(tony_home) == []


def test_interrupt_mid_rendezvous_kills_the_job(shell, tony_home):
    # worker:1 hangs before it can register (sitecustomize runs before the executor), so the
    # job sits in rendezvous; a SIGINT there must kill the job and leave nothing behind.
    hang = tony_home.parent / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(HANG_WORKER_1)

    # Strike once worker:0 has registered: the job is waiting for worker:1, mid-rendezvous.
    strike = Interrupter(
        lambda: any(t.id == "worker:0" and t.registered_at for t in tasks_of_the_only_job())
    )
    with pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic(
            "tony", f"--workers 2 --conf tony.containers.envs=PYTHONPATH={hang}", "1"
        )
    assert not strike.missed, f"worker:0 never registered: {strike.last_error}"
    (rec,) = list_jobs()
    snap = open_client(rec).snapshot()
    assert snap.state == "KILLED" and "interrupted" in snap.reason
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_registration_timeout_ends_the_job(shell, tony_home):
    hang = tony_home.parent / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(HANG_WORKER_1)
    with pytest.raises(JobFailedError, match="worker:1 did not register within 2 s"):
        shell.run_cell_magic(
            "tony",
            f"--workers 2 --conf tony.task.registration-timeout-sec=2 "
            f"--conf tony.containers.envs=PYTHONPATH={hang}",
            "1",
        )
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_worker_waiting_after_chief_is_stopped(shell, tony_home):
    cell = "import os, time\nif os.environ['TASK_INDEX'] == '1':\n    time.sleep(600)\n"
    with pytest.raises(JobFailedError, match="worker:1 still running 2 s after worker:0 finished"):
        shell.run_cell_magic(
            "tony", f"--workers 2 --conf tony.task.completion-grace-sec=2 {FAST}", cell
        )
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_crashed_parameter_server_ends_the_job(shell, tony_home):
    cell = """
import os, time
if os.environ["JOB_NAME"] == "ps":
    os._exit(3)
time.sleep(600)
"""
    with pytest.raises(JobFailedError, match="ps:0 exited with code 3"):
        shell.run_cell_magic("tony", f"--workers 1 --ps 1 {FAST}", cell)
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_hung_worker_is_caught_by_missed_heartbeats(shell, tony_home):
    cell = (
        "import os, signal, time\n"
        "if os.environ['TASK_INDEX'] == '1':\n"
        "    os.kill(os.getpid(), signal.SIGSTOP)\n"
        "time.sleep(600)\n"
    )
    start = time.monotonic()
    with pytest.raises(JobFailedError, match="worker:1 missed 3 heartbeats"):
        shell.run_cell_magic(
            "tony",
            "--workers 2 --conf tony.task.heartbeat-interval-ms=300 "
            "--conf tony.task.max-missed-heartbeats=3",
            cell,
        )
    assert time.monotonic() - start < 30
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_async_returns_at_once_and_result_pulls_later(shell, tony_home):
    job = shell.run_cell_magic(
        "tony", "--workers 1 --async --pull z", "import time\ntime.sleep(1.5)\nz = 7\nz * 6"
    )
    assert job.state in ("STARTING", "RUNNING")
    assert job.result(timeout=60) == 42 and shell.user_ns["z"] == 7
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_line_magics_list_status_logs_kill_attach(shell, tony_home, capsys):
    job = shell.run_cell_magic(
        "tony",
        "--workers 2 --async --name sleepy",
        "import time\nprint('working', flush=True)\ntime.sleep(600)",
    )
    deadline = time.monotonic() + 30
    while (
        "working" not in open_client(job.record).logs("worker:1")[0] and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    capsys.readouterr()
    shell.run_line_magic("tony", "list")
    out = capsys.readouterr().out
    assert job.job_id in out and "sleepy" in out and "RUNNING" in out
    shell.run_line_magic("tony", f"status {job.job_id}")
    out = capsys.readouterr().out
    assert "worker:0" in out and "worker:1" in out and "RUNNING" in out
    shell.run_line_magic("tony", f"logs {job.job_id} worker:1")
    assert "working" in capsys.readouterr().out
    shell.run_line_magic("tony", f"attach {job.job_id}")
    shell.run_line_magic("tony", f"kill {job.job_id}")
    assert "KILLED" in capsys.readouterr().out
    with pytest.raises(UsageError, match="no task 'worker:9'"):
        shell.run_line_magic("tony", f"logs {job.job_id} worker:9")
    with pytest.raises(UsageError, match="no job 'nope'"):
        shell.run_line_magic("tony", "status nope")
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_run_script_passes_argv(shell, tony_home, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys\nargs = sys.argv[1:]\nprint('args', args)\n")
    shell.run_line_magic("tony", f"run {script} --workers 1 --pull args -- --epochs 3")
    assert shell.user_ns["args"] == ["--epochs", "3"]
    with pytest.raises(UsageError, match="no such script"):
        shell.run_line_magic("tony", "run /nonexistent.py")
