"""Real TensorFlow training as a YARN application, with each task type's resources checked on
the real containers through the RM's REST API."""

import time

import pytest
from helpers.cells import MWMS, PS
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

pytestmark = [pytest.mark.yarn, pytest.mark.slow]


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def containers_while_running(cluster, app_id, count, timeout=90):
    deadline = time.monotonic() + timeout
    while len(found := cluster.containers(app_id)) < count:
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    return found


def test_mwms_two_workers_train_in_yarn_containers_of_the_asked_size(digits, tony_home, cluster):
    job = digits.run_cell_magic(
        "tony",
        "--workers 2 --memory 1280m --conf tony.am.memory=768m --async --pull history,replicas",
        MWMS,
    )
    found = containers_while_running(cluster, job.job_id, 3)
    sizes = sorted((c["allocatedMB"], c["allocatedVCores"]) for c in found)
    assert sizes == [(768, 1), (1280, 1), (1280, 1)]  # the AM, then the two workers
    last = job.result(timeout=300)
    history = digits.user_ns["history"]
    assert digits.user_ns["replicas"] == 2
    assert last == history["loss"][-1] < history["loss"][0]
    assert cluster.wait_app_end(job.job_id)["finalStatus"] == "SUCCEEDED"
    (rec,) = list_jobs()
    snap = open_client(rec).snapshot()  # from the record the client kept: the AM is gone
    assert snap.state == "SUCCEEDED" and [t.state for t in snap.tasks] == ["SUCCEEDED"] * 2
    log, _ = open_client(rec).logs("worker:1")
    assert "Epoch 3/3" in log


def test_parameter_server_training_with_chief_workers_and_ps(digits, tony_home, cluster):
    # Five containers need more vcores than the CPU node has (4), so the job uses queue gpu:
    # chief and workers on the gpu node; the ps ("" = unlabelled) and the AM on the plain one.
    last = digits.run_cell_magic(
        "tony",
        "--chief --workers 2 --ps 1 --memory 1g --queue gpu --node-label gpu "
        "--conf tony.ps.memory=768m --conf tony.ps.node-label= --conf tony.am.memory=768m "
        "--pull history,ps_devices",
        PS,
    )
    history = digits.user_ns["history"]
    assert digits.user_ns["ps_devices"] == 1
    assert last == history["loss"][-1] < history["loss"][0]
    (rec,) = list_jobs()
    assert cluster.wait_app_end(rec.id)["finalStatus"] == "SUCCEEDED"
