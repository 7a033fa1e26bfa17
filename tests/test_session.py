"""Interactive sessions: warm executors that keep their state from cell to cell. The tests that
use ``backend`` are the contract: they run on the local backend and on YARN, where the session
is one YARN application."""

import os
import re
import signal
import time

import pytest
from helpers.cells import MWMS_MODEL
from helpers.jobs import Interrupter, wait_no_processes
from IPython.core.error import UsageError
from sklearn.datasets import load_digits

from tony_jupyter import session as sessions
from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client


@pytest.fixture
def session_shell(shell, tony_home):
    """A shell with a session of two workers; stopped (and checked gone) afterwards."""
    X, y = load_digits(return_X_y=True)
    shell.user_ns.update(X=(X / 16.0).astype("float32"), y=y)
    shell.run_line_magic("tony", "session start --workers 2 --no-tensorboard")
    yield shell
    if sessions.current() is not None:
        shell.run_line_magic("tony", "session stop")
    assert sessions.current() is None
    assert wait_no_processes(tony_home) == []


BUILD = "import tensorflow as tf\n" + MWMS_MODEL + "strategy.num_replicas_in_sync\n"
TRAIN = "model.fit(dataset, epochs=1, steps_per_epoch=20, verbose=0).history['loss'][-1]"


@pytest.mark.usefixtures("backend")
@pytest.mark.slow
def test_state_is_kept_between_cells_and_training_goes_on(session_shell):
    sh = session_shell
    assert sh.run_cell_magic("tony", "", BUILD) == 2
    first = sh.run_cell_magic("tony", "", TRAIN)
    second = sh.run_cell_magic("tony", "", TRAIN)  # the same model, trained further
    assert second < first
    # A cell that raises on one worker reports it; the next cell still runs.
    with pytest.raises(JobFailedError) as e:
        sh.run_cell_magic(
            "tony",
            "",
            "import os\nif os.environ['TASK_INDEX'] == '1':\n"
            "    raise ValueError('worker 1 says no')\n",
        )
    assert e.value.task == "worker:1" and "ValueError: worker 1 says no" in e.value.remote_traceback
    third = sh.run_cell_magic("tony", "--pull epochs_done", "epochs_done = 3\n" + TRAIN)
    assert third < second and sh.user_ns["epochs_done"] == 3


@pytest.mark.usefixtures("backend")
def test_interrupt_returns_control_and_the_session_goes_on(session_shell):
    sh = session_shell
    sh.run_cell_magic("tony", "", "counter = 1")
    client = sessions.current().job.client

    def cell_2_runs() -> bool:
        # Strike once the cell runs on the tasks (on a loaded YARN that can take a while).
        cells = client.cells()
        return bool(cells) and cells[-1].id == 2 and cells[-1].state == "RUNNING"

    strike = Interrupter(cell_2_runs)
    with pytest.raises(JobFailedError) as e:
        sh.run_cell_magic("tony", "", "import time\ntime.sleep(120)")
    assert not strike.missed, f"the cell never ran: {strike.last_error}"
    assert e.value.state == "INTERRUPTED" and "KeyboardInterrupt" in e.value.remote_traceback
    assert sh.run_cell_magic("tony", "", "counter + 1") == 2


@pytest.mark.usefixtures("backend")
def test_cell_log_and_names_from_the_notebook(session_shell, capsys):
    sh = session_shell
    sh.user_ns["greeting"] = "hello"
    assert sh.run_cell_magic("tony", "", "print(greeting, 'from the task')\nlen(greeting)") == 5
    out = capsys.readouterr().out
    # each task's line once: the widget's follower reads every part of the log once
    assert out.count("hello from the task") == 2, out
    with pytest.raises(UsageError, match="'not_here', not defined"):
        sh.run_cell_magic("tony", "", "not_here + 1")
    with pytest.raises(UsageError, match="other tasks or resources"):
        sh.run_cell_magic("tony", "--workers 3", "1")
    assert sh.run_cell_magic("tony", "--workers 2", "7") == 7  # matching flags are fine
    time.sleep(1.5)  # a heartbeat carries each task's memory
    capsys.readouterr()
    sh.run_line_magic("tony", "session")
    summary = capsys.readouterr().out
    assert "cells run: 2" in summary and re.search(r"worker:1 RUNNING \d+ MiB", summary)


def test_lost_task_breaks_the_session_and_restart_restores_it(session_shell, capsys):
    sh = session_shell
    pid = sh.run_cell_magic("tony", "", "import os\nos.getpid()")
    tasks = open_client(list_jobs()[0]).snapshot().tasks
    os.kill(next(t.pid for t in tasks if t.id == "worker:1"), signal.SIGKILL)

    deadline = time.monotonic() + 20
    while open_client(list_jobs()[0]).snapshot().state == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with pytest.raises(UsageError, match="session is broken .* %tony session restart"):
        sh.run_cell_magic("tony", "", "1")
    sh.run_line_magic("tony", "session restart")
    assert sh.run_cell_magic("tony", "", "import os\nos.getpid()") != pid
    assert sh.run_cell_magic("tony", "", "2 + 2") == 4


def test_idle_session_stops_with_a_clear_message(shell, tony_home):
    shell.run_line_magic("tony", "session start --workers 1 --no-tensorboard --idle-timeout 1")
    try:
        time.sleep(2.5)
        with pytest.raises(UsageError, match="idle for 1 s"):
            shell.run_cell_magic("tony", "", "1")
    finally:
        shell.run_line_magic("tony", "session stop")
    assert wait_no_processes(tony_home) == []


def test_session_flag_errors(shell, tony_home):
    with pytest.raises(UsageError, match="--max-attempts does not apply to a session"):
        shell.run_line_magic("tony", "session start --workers 1 --max-attempts 2")
    with pytest.raises(UsageError, match="--idle-timeout: expected a number"):
        shell.run_line_magic("tony", "session start --idle-timeout soon")
    with pytest.raises(UsageError, match="no session is running"):
        shell.run_line_magic("tony", "session stop")
    assert list_jobs() == []
