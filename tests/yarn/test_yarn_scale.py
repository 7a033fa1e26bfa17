"""The mission's own example at its own size: ``%%tony --workers 8 --gpus 1`` on the devcluster,
whose gpu node declares 8 counted GPUs (as a test cluster may; there is no GPU here, so
TensorFlow trains on the CPU): a real MultiWorkerMirroredStrategy training with 8 workers,
each in its own one-GPU container with its own device slot."""

import pytest
from helpers.cells import MWMS_MODEL
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter_devcluster.config import NM2_GPUS

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

CELL = (
    """
import os
import tensorflow as tf
import tony_jupyter
print("cuda=" + os.environ.get("CUDA_VISIBLE_DEVICES", "-"), flush=True)
"""
    + MWMS_MODEL
    + """fit = model.fit(dataset, epochs=2, steps_per_epoch=10, verbose=2,
                callbacks=[tony_jupyter.progress()])
history = fit.history
replicas = strategy.num_replicas_in_sync
history["loss"][-1]
"""
)


def test_eight_one_gpu_workers_train_with_mwms(shell, tony_home, cluster):
    assert NM2_GPUS >= 8
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    job = shell.run_cell_magic(
        "tony",
        "--workers 8 --gpus 1 --queue gpu --node-label gpu --memory 512m "
        "--conf tony.am.memory=768m --no-tensorboard --async --pull history,replicas",
        CELL,
    )
    last = job.result(timeout=600)
    assert shell.user_ns["replicas"] == 8
    history = shell.user_ns["history"]
    assert last == history["loss"][-1] < history["loss"][0]
    assert cluster.wait_app_end(job.job_id)["finalStatus"] == "SUCCEEDED"
    (rec,) = list_jobs()
    client = open_client(rec)
    snap = client.snapshot()
    assert [t.state for t in snap.tasks] == ["SUCCEEDED"] * 8
    slots = []
    for i in range(8):
        log, _ = client.logs(f"worker:{i}")
        slots += [line.split("=", 1)[1] for line in log.splitlines() if line.startswith("cuda=")]
    # one slot each, all different: the AM hands out the node's GPUs (YARN counts them only)
    assert sorted(slots) == [str(i) for i in range(8)]
