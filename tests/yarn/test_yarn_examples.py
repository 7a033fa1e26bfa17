"""On YARN: the directory shipped with a job (a script's, a notebook's) reaches the containers
through HDFS, uploaded once per content hash, and other people's training scripts run there
unchanged (tests/examples/). Nothing of the notebook host's directory is read by the tasks."""

import json
import os

import pytest
from helpers.examples import place, pymp_dirs

from tony_jupyter.launcher.client import jobs_dir

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

RUN = "--workers 1 --no-tensorboard"


def src_info(job_id: str) -> dict:
    return json.loads((jobs_dir() / job_id / "yarn.json").read_text())["src"]


def test_a_cell_imports_beside_the_notebook_from_the_shipped_archive(shell, tony_home, cluster):
    notebook = tony_home.parent / "notebook"
    (notebook / "mnist_setup.py").write_text("BATCH = 64\n")
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
