"""Acceptance: other people's TensorFlow and PyTorch code runs unchanged on the local backend,
apart from a dataset download swapped for local data of the same shape (tests/examples/: each
file, or the README.md beside it, says its source, license and what changed). Each test checks
that training progressed and that nothing is left behind: no process, no multiprocessing
temporary directory."""

import os
import re
import shutil
from pathlib import Path

import pytest
from helpers.examples import EXAMPLES, mnist_idx, place, pymp_dirs
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


TONY_MNIST = EXAMPLES / "tony" / "mnist-pytorch"


def tony_script(name: str, example: Path) -> Path | None:
    """TonY's own script (not vendored here; see the example's README.md): beside the example's
    tony.xml, or in a TonY checkout named by $TONY_SOURCE."""
    for where in (
        example,
        Path(os.environ.get("TONY_SOURCE", "/nonexistent")) / "tony-examples" / example.name,
    ):
        if (where / name).is_file():
            return where / name
    return None


def test_tony_mnist_pytorch(shell, notebook, tmp_path):
    """TonY's tony-examples/mnist-pytorch script with TonY's tony.xml for it: TonY's INIT_METHOD,
    RANK and WORLD, gloo (its own --backend flag), two short epochs on local MNIST-shaped data."""
    pytest.importorskip("torchvision", reason="pip install torchvision (TonY's example uses it)")
    script = tony_script("mnist_distributed.py", TONY_MNIST)
    if script is None:
        pytest.skip(
            f"TonY's mnist_distributed.py is not vendored: put it in {TONY_MNIST}, or set "
            "TONY_SOURCE to a TonY checkout (tests/examples/tony/mnist-pytorch/README.md)"
        )
    place("tony/mnist-pytorch", notebook)
    shutil.copy(script, notebook / script.name)
    root = mnist_idx(tmp_path / "mnist")
    shell.run_line_magic(
        "tony",
        "run mnist_distributed.py --conf-file tony.xml --memory 2g --no-tensorboard -- "
        f"--backend gloo --epochs 2 --batch-size 500 --root {root}",
    )
    (rec,) = list_jobs()
    assert open_client(rec).snapshot().state == "SUCCEEDED"
    for task in ("worker:0", "worker:1"):
        log, _ = open_client(rec).logs(task)
        epochs = re.findall(r"Epoch: \d+/2, train loss: (\d+\.\d+), train acc: (\d+\.\d+)", log)
        assert len(epochs) == 2, log[-2000:]
        (loss1, acc1), (loss2, acc2) = [tuple(map(float, e)) for e in epochs]
        assert loss2 < loss1 and acc2 > 0.5, log[-2000:]
