"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_mlflow.py NAME PYTHON`),
with ``MLFLOW_TRACKING_URI`` naming a tracking server on the edge (http://edge:PORT): waits
for the server to answer, runs `doctor` (with that URI, then with a file store), runs one
``%%tony --workers 2`` Keras cell with ``tony_jupyter.progress()`` as a notebook's kernel there
would, and reads back with MLflow's client, from the edge, what the chief (on a worker host)
logged; all of it as JSON in NAME.json (or the error the cell raised). PYTHON: the nodes' own
interpreter, for the doctor's probe."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import edge_kernel  # beside this script
import requests

# tests/test_mlflow.py's cell: 3 epochs of 8 batches, every batch's loss reported by progress()
CELL = """\
import numpy as np, tensorflow as tf, tony_jupyter
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32")
y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
history = model.fit(x, y, epochs=3, batch_size=32, verbose=0, callbacks=[tony_jupyter.progress()])
history.history["loss"][-1]
"""


def wait_for_server(uri: str, timeout: float = 300) -> float:
    """Seconds until the tracking server answers its health route."""
    t0 = time.monotonic()
    while True:
        try:
            if requests.get(f"{uri}/health", timeout=5).ok:
                return time.monotonic() - t0
        except requests.ConnectionError:
            pass
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"the tracking server at {uri} did not answer in {timeout:g} s")
        time.sleep(0.5)


def doctor(python: str, uri: str, probe: bool) -> dict:
    from tony_jupyter.launcher.doctor import doctor as run_doctor

    saved = os.environ["MLFLOW_TRACKING_URI"]
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        t0 = time.monotonic()
        words = ["--python", python] + ([] if probe else ["--no-probe"])
        text, ok = run_doctor(words)
        return {"text": text, "ok": ok, "seconds": time.monotonic() - t0}
    finally:
        os.environ["MLFLOW_TRACKING_URI"] = saved


def read_run(uri: str, experiment: str) -> dict:
    """What MLflow's client reads from the server: the experiment's runs, and the loss history
    of the first."""
    import mlflow

    client = mlflow.MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return {"runs": []}
    runs = client.search_runs([found.experiment_id])
    out: dict = {
        "runs": [
            {
                "name": r.info.run_name,
                "status": r.info.status,
                "params": r.data.params,
                "tags": {k: v for k, v in r.data.tags.items() if k.startswith("tony.")},
            }
            for r in runs
        ]
    }
    if runs:
        history = client.get_metric_history(runs[0].info.run_id, "loss")
        out["loss"] = [[m.step, m.value, m.timestamp] for m in history]
    return out


def main(name: str, python: str) -> None:
    uri = os.environ["MLFLOW_TRACKING_URI"]
    out: dict = {"kernel_host": socket.gethostname(), "uri": uri}
    out["server_answered_s"] = wait_for_server(uri)
    out["doctor"] = doctor(python, uri, probe=True)
    out["doctor_file_store"] = doctor(python, Path("mlruns").resolve().as_uri(), probe=False)
    ip = edge_kernel.kernel(data=False)
    t0 = time.monotonic()
    try:
        job = ip.run_cell_magic("tony", f"--workers 2 --async --no-tensorboard --name {name}", CELL)
        out["value"] = job.result(timeout=900)
        out["job_id"] = job.job_id
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        out["error"] = str(e)
    out["seconds"] = time.monotonic() - t0
    out.update(read_run(uri, os.environ["MLFLOW_EXPERIMENT_NAME"]))
    Path(f"{name}.json").write_text(json.dumps(out))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
