"""On YARN: the directory shipped with a job (a script's, a notebook's) reaches the containers
through HDFS, uploaded once per content hash, and other people's training scripts run there
unchanged (tests/examples/). Nothing of the notebook host's directory is read by the tasks."""

import json
import os
import re
import secrets

import pytest
from helpers.examples import fixed_output_dir, place, pymp_dirs

from tony_jupyter.launcher.client import jobs_dir, list_jobs
from tony_jupyter.launcher.pickclient import open_client

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

RUN = "--workers 1 --no-tensorboard"
# a chief, 2 workers and 2 ps (the tutorial's sharding needs 2) in the devcluster's 6 GB node
PS_RUN = (
    "--chief --workers 2 --ps 2 --memory 1g --conf tony.ps.memory=768m "
    "--conf tony.am.memory=768m --no-tensorboard"
)


def src_info(job_id: str) -> dict:
    return json.loads((jobs_dir() / job_id / "yarn.json").read_text())["src"]


def test_a_cell_imports_beside_the_notebook_from_the_shipped_archive(shell, tony_home, cluster):
    notebook = tony_home.parent / "notebook"
    # content of this run only: an archive from an earlier run on the same cluster is not there
    (notebook / "mnist_setup.py").write_text(f"BATCH = 64  # {secrets.token_hex(8)}\n")
    cell = "import os, sys, mnist_setup\nseen = (mnist_setup.BATCH, sys.path[0], os.getcwd())"
    first = shell.run_cell_magic("tony", f"{RUN} --async --pull seen", cell)
    first.result(timeout=300)
    batch, path0, cwd = shell.user_ns["seen"]
    # the container's localized copy (``src``, a link into the NodeManager's cache for this
    # application), not the notebook's directory on this host
    assert batch == 64 and not path0.startswith(str(notebook))
    assert (
        path0.endswith(os.sep + "src") and first.job_id.replace("application", "container") in path0
    )
    assert cwd == os.path.realpath(path0) and first.job_id in cwd
    assert src_info(first.job_id)["bytes_uploaded"] > 0
    again = shell.run_cell_magic("tony", f"{RUN} --async", "import mnist_setup")
    again.result(timeout=300)
    info = src_info(again.job_id)
    assert info["bytes_uploaded"] == 0 and info["hash"] == src_info(first.job_id)["hash"]


def test_multi_worker_with_keras_on_yarn(shell, tony_home, cluster):
    notebook = place("tensorflow/multi_worker_with_keras", tony_home.parent / "notebook")
    before = pymp_dirs()
    history = shell.run_line_magic("tony", "run main.py --workers 2 --no-tensorboard")
    loss = history.history["loss"]
    assert len(loss) == 3 and loss[-1] < loss[0]
    assert pymp_dirs() - before == set()
    assert notebook.exists()


def test_parameter_server_training_model_fit_on_yarn(shell, tony_home, cluster):
    notebook = place("tensorflow/parameter_server_training", tony_home.parent / "notebook")
    before = pymp_dirs()
    # the tutorial's fixed /tmp/my_working_dir: the chief's container is on this host
    with fixed_output_dir("tensorflow/parameter_server_training", "/tmp/my_working_dir") as wd:
        history = shell.run_line_magic("tony", f"run model_fit.py {PS_RUN}")
        assert (wd / "ckpt").is_dir()
    loss = history.history["loss"]
    assert len(loss) == 5 and loss[-1] < loss[0]
    assert pymp_dirs() - before == set()
    assert notebook.exists()


def test_parameter_server_training_custom_loop_on_yarn(shell, tony_home, cluster):
    place("tensorflow/parameter_server_training", tony_home.parent / "notebook")
    before = pymp_dirs()
    shell.run_line_magic("tony", f"run custom_training_loop.py {PS_RUN}")
    (rec,) = list_jobs()
    log, _ = open_client(rec).logs("chief:0")
    accuracy = [float(a) for a in re.findall(r"Finished epoch \d, accuracy is ([\d.]+)\.", log)]
    assert len(accuracy) == 4 and accuracy[-1] > accuracy[0], log[-2000:]
    assert log.count("Evaluation accuracy:") == 2
    assert pymp_dirs() - before == set()
