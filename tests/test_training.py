"""Real TensorFlow training through %%tony on the local backend."""

import pytest
from helpers.cells import MWMS, PS
from helpers.jobs import wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.runtime import FitHistory

pytestmark = pytest.mark.slow


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def test_multi_worker_mirrored_strategy_trains_with_two_workers(digits, tony_home):
    last = digits.run_cell_magic("tony", "--workers 2 --pull history,replicas,fit", MWMS)
    history = digits.user_ns["history"]
    # A Keras History holds its model, which cannot be pickled once the other worker is gone:
    # it comes back without it.
    fit = digits.user_ns["fit"]
    assert isinstance(fit, FitHistory) and fit.history == history and fit.epoch == [0, 1, 2]
    assert fit.params["steps"] == 30
    assert digits.user_ns["replicas"] == 2
    assert last == history["loss"][-1] < history["loss"][0]
    assert history["accuracy"][-1] > 0.5
    (rec,) = list_jobs()
    snap = open_client(rec).snapshot()
    assert snap.state == "SUCCEEDED" and [t.state for t in snap.tasks] == ["SUCCEEDED"] * 2
    progress = snap.task("worker:0").progress
    assert progress["epoch"] == 3 and progress["step"] == 90
    assert 0 < progress["accuracy"] <= 1  # batch logs are per-replica sums; progress undoes that
    log, _ = open_client(rec).logs("worker:1")
    assert "Epoch 3/3" in log
    assert wait_no_processes(tony_home) == []


def test_parameter_server_strategy_trains_with_chief_workers_and_ps(digits, tony_home):
    last = digits.run_cell_magic("tony", "--chief --workers 2 --ps 1 --pull history,ps_devices", PS)
    history = digits.user_ns["history"]
    assert digits.user_ns["ps_devices"] == 1
    assert last == history["loss"][-1] < history["loss"][0]
    (rec,) = list_jobs()
    client = open_client(rec)
    assert client.wait_am_exit()  # the final status is written once every task is stopped
    snap = client.snapshot()
    states = {t.id: t.state for t in snap.tasks}
    # The chief ends the job; the serving workers and the ps are stopped, not waited for.
    assert snap.state == "SUCCEEDED" and states["chief:0"] == "SUCCEEDED"
    assert {states["worker:0"], states["worker:1"], states["ps:0"]} == {"STOPPED"}
    assert wait_no_processes(tony_home) == []


def test_keras3_path_without_legacy_keras_under_mirrored_strategy(shell, tony_home):
    """--keras3: TF_USE_LEGACY_KERAS stays unset, tf.keras is Keras 3; a single worker trains."""
    cell = """
import numpy as np, tensorflow as tf
assert tf.keras.__version__.startswith("3"), tf.keras.__version__
model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
model.fit(x, x.sum(axis=1), epochs=3, verbose=0)
"""
    fit = shell.run_cell_magic("tony", "--workers 1 --keras3", cell)
    # The cell's value, a Keras 3 History, arrives as a FitHistory.
    assert isinstance(fit, FitHistory) and fit.epoch == [0, 1, 2]
    assert fit.history["loss"][-1] < fit.history["loss"][0]
