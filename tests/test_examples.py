"""Acceptance: other people's TensorFlow code runs unchanged on the local backend, apart from
a dataset download swapped for local data of the same shape (tests/examples/: each file says
its source, license and the lines changed). Each test checks that training progressed and that
nothing is left behind: no process, no multiprocessing temporary directory."""

import re

import pytest
from helpers.examples import place, pymp_dirs
from helpers.jobs import wait_no_processes

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.clients import open_client

pytestmark = pytest.mark.slow


@pytest.fixture
def notebook(shell, tony_home, tmp_path, monkeypatch):
    """The notebook's working directory, and a TMPDIR of the test's own, which the tasks
    inherit: what multiprocessing leaves there is this test's."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    yield tony_home.parent / "notebook"
    assert wait_no_processes(tony_home) == []
    assert pymp_dirs(str(tmp)) == set()


def test_multi_worker_with_keras(shell, notebook):
    place("tensorflow/multi_worker_with_keras", notebook)
    history = shell.run_line_magic("tony", "run main.py --workers 2 --no-tensorboard")
    loss = history.history["loss"]
    assert len(loss) == 3 and loss[-1] < loss[0]


def test_multi_worker_with_ctl(shell, notebook):
    place("tensorflow/multi_worker_with_ctl", notebook)
    shell.run_line_magic("tony", "run main.py --workers 2 --no-tensorboard")
    (rec,) = list_jobs()
    log, _ = open_client(rec).logs("worker:0")
    losses = [
        float(m) for m in re.findall(r"Epoch: \d+, accuracy: [\d.]+, train_loss: (\d+\.\d+)", log)
    ]
    assert len(losses) == 3 and losses[-1] < losses[0], log[-2000:]
