"""The job as one MLflow run: with mlflow in the tasks and MLFLOW_TRACKING_URI set in the
notebook, the chief logs the spec as parameters, progress()/report() metrics by step, and the
final state, into a local file store (the devcluster's containers share this host's disk)."""

import json

import pytest

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.executor.mlflow_run import spec_params
from tony_jupyter.options import parse_job_args

mlflow = pytest.importorskip("mlflow", reason="mlflow is not installed: pip install -e '.[test]'")

KERAS_FIT = """\
import numpy as np, tensorflow as tf, tony_jupyter
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32")
y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
history = model.fit(x, y, epochs=3, batch_size=32, verbose=0, callbacks=[tony_jupyter.progress()])
history.history["loss"][-1]
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 wants it for a file store
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "digits")
    mlflow.set_tracking_uri(uri)
    return mlflow.MlflowClient(uri)


def runs(client):
    experiment = client.get_experiment_by_name("digits")
    assert experiment is not None, "the chief made no run"
    return client.search_runs([experiment.experiment_id])


@pytest.mark.slow
@pytest.mark.usefixtures("backend")  # on YARN the settings travel in the spec's env
def test_the_chief_logs_the_job_as_one_mlflow_run(shell, tony_home, store):
    final_loss = shell.run_cell_magic(
        "tony", "--workers 2 --name linreg --no-tensorboard", KERAS_FIT
    )
    (run,) = runs(store)  # one run for the job, not one per task
    assert run.info.run_name == "linreg" and run.info.status == "FINISHED"
    assert run.data.params["worker.instances"] == "2"
    assert run.data.params["framework"] == "tensorflow"
    assert run.data.tags["tony.job_id"]
    # every batch's loss, by step (3 epochs of 8 batches), ending where the notebook's ends
    history = store.get_metric_history(run.info.run_id, "loss")
    steps = sorted({m.step for m in history})
    assert steps[0] == 1 and steps[-1] == 24 and len(steps) >= 24
    last = max(history, key=lambda m: (m.step, m.timestamp))
    assert last.value == pytest.approx(final_loss, rel=1e-3)
    assert history[0].value > final_loss


@pytest.mark.slow
def test_a_failing_cell_ends_its_run_failed(shell, tony_home, store):
    cell = "import tony_jupyter\ntony_jupyter.report(step=1, loss=2.0)\nraise ValueError('bad')"
    with pytest.raises(JobFailedError, match="bad"):
        shell.run_cell_magic("tony", "--workers 1 --name broken --no-tensorboard", cell)
    (run,) = runs(store)
    assert run.info.status == "FAILED" and run.data.metrics["loss"] == 2.0


def test_the_tracking_settings_reach_the_tasks_and_secrets_stay_out_of_the_params(store):
    _, spec = parse_job_args("--workers 3 --ps 1 --conf tony.containers.envs=API_KEY=s3cret")
    env = dict(spec.env)
    assert env["MLFLOW_TRACKING_URI"] == store.tracking_uri  # reaches YARN containers too
    assert env["MLFLOW_EXPERIMENT_NAME"] == "digits" and env["API_KEY"] == "s3cret"
    params = spec_params(json.loads(spec.to_json()))
    assert params["worker.instances"] == "3" and params["ps.instances"] == "1"
    assert "s3cret" not in str(params) and "API_KEY" in params["env"]  # names only
