"""Acceptance: other people's TensorFlow and PyTorch code runs unchanged on the local backend,
apart from a dataset download swapped for local data of the same shape. The scripts are their
authors': they come from outside this repository (tests/examples/README.md says from where,
and what differs). Each test checks
that training progressed and that nothing is left behind: no process, no multiprocessing
temporary directory."""

import importlib.util
import re

import pytest
from helpers.examples import fixed_output_dir, mnist_idx, place, pymp_dirs
from helpers.jobs import wait_no_processes

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

pytestmark = pytest.mark.slow

PS_WORKING_DIR = "/tmp/my_working_dir"  # the parameter server tutorial's, as written
PS_TASKS = "--chief --workers 2 --ps 2"


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


def task_log(task: str = "chief:0") -> str:
    (rec,) = list_jobs()
    log, _ = open_client(rec).logs(task)
    return log


def test_parameter_server_training_model_fit(shell, notebook):
    """The tutorial's Model.fit path (tf-keras, as the tasks get by default), with a chief,
    2 workers and 2 parameter servers."""
    place("tensorflow/parameter_server_training", notebook)
    with fixed_output_dir("tensorflow/parameter_server_training", PS_WORKING_DIR) as wd:
        history = shell.run_line_magic("tony", f"run model_fit.py {PS_TASKS} --no-tensorboard")
        assert (wd / "ckpt").is_dir()  # the tutorial's ModelCheckpoint, on the chief
    loss = history.history["loss"]
    assert len(loss) == 5 and loss[-1] < loss[0]


def test_parameter_server_training_custom_loop(shell, notebook):
    """The tutorial's custom training loop path, then both of its evaluations; 2 parameter
    servers, which its variable-sharding assertions need."""
    place("tensorflow/parameter_server_training", notebook)
    shell.run_line_magic("tony", f"run custom_training_loop.py {PS_TASKS} --no-tensorboard")
    log = task_log("chief:0")
    accuracy = [float(a) for a in re.findall(r"Finished epoch \d, accuracy is ([\d.]+)\.", log)]
    assert len(accuracy) == 4 and accuracy[-1] > accuracy[0], log[-2000:]
    assert re.search(r"Final loss is [\d.]+", log) and log.count("Evaluation accuracy:") == 2


def test_tony_mnist_distributed_tf1(shell, notebook, tmp_path):
    """TonY's TF1 example on tf.compat.v1, with its README's tony-test.xml (2 workers, 1 ps,
    tony.worker.memory, tony.application.security.enabled) and its README's task params, fewer
    steps."""
    place("tony/mnist-tensorflow", notebook)
    model = tmp_path / "model"
    shell.run_line_magic(
        "tony",
        # A TF1 non-chief worker polls for the chief's initialised model every 30 s; one that
        # joins after the chief's last step trains its own --steps alone (StopAtStepHook counts
        # from its join), past the default 30 s grace on a loaded machine: both must finish.
        "run mnist_distributed.py --conf-file tony-test.xml --no-tensorboard "
        "--conf tony.task.completion-grace-sec=300 -- "
        f"--steps 200 --data_dir {tmp_path / 'data'} --working_dir {model}",
    )
    for i in (0, 1):
        log = task_log(f"worker:{i}")
        assert "Done training!" in log, log[-2000:]
    log = task_log("worker:0")
    accuracy = [float(a) for a in re.findall(r"Step \d+, training accuracy: ([\d.]+)", log)]
    assert len(accuracy) >= 2 and accuracy[-1] > accuracy[0], log[-2000:]
    assert list(model.glob("model.ckpt-*.index"))  # the chief worker's checkpoints


def test_tony_mnist_pytorch(shell, notebook, tmp_path):
    """TonY's tony-examples/mnist-pytorch script with TonY's tony.xml for it: TonY's INIT_METHOD,
    RANK and WORLD, gloo (its own --backend flag), two short epochs on local MNIST-shaped data."""
    if importlib.util.find_spec("torchvision") is None:  # not imported here: the tasks do
        pytest.skip("pip install torchvision (TonY's example uses it)")
    place("tony/mnist-pytorch", notebook)
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
