"""The kernel's warm AM on YARN (``TONY_JUPYTER_WARM_YARN``, launcher/yarn/warmkeeper.py and
am/yarn/warmapp.py), on the devcluster: after a job, a warm AM holds one started container per
task; the next job of that shape is handed to it and really trains in those containers; a job
of another shape lets it go and runs the usual way; unused, it ends by itself; nothing of it is
left behind."""

import json
import time

import pytest
from helpers.cells import MWMS
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn import warmkeeper as warm

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

WHERE = """
import json, os
task = json.loads(os.environ["TF_CONFIG"])["task"]
(task["type"], task["index"], os.environ["CONTAINER_ID"])
"""


@pytest.fixture
def warm_on(monkeypatch, tony_home):
    monkeypatch.setenv(warm.warm.YARN_IDLE, "300")
    yield
    warm.discard()  # as the kernel's exit does; the fixture then checks nothing is left


def _warm_app(cluster, timeout=120) -> dict:
    """The warm AM started after the last job, once it runs."""
    deadline = time.monotonic() + timeout
    while True:
        w = warm.current()
        if w is not None:
            app = cluster.app(w.app_id)
            if app["state"] == "RUNNING":
                return app
            assert app["state"] not in ("FINISHED", "FAILED", "KILLED"), app["diagnostics"]
        assert time.monotonic() < deadline, "no warm AM came up"
        time.sleep(0.2)


def test_the_next_job_of_the_same_shape_trains_in_the_warm_ams_containers(shell, cluster, warm_on):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    first = shell.run_cell_magic("tony", "--workers 2 --no-tensorboard", WHERE)
    assert first[:2] == ("worker", 0)
    spare = _warm_app(cluster)
    assert "tony-jupyter-warm" in spare["applicationTags"]
    # The spare executors wait before the job comes, in the AM's containers: one per task.
    deadline = time.monotonic() + 120
    while warm.ready(warm.current()) < 2:
        assert time.monotonic() < deadline, "the warm AM's spare executors never came up"
        time.sleep(0.5)
    held = {c["containerId"] for c in cluster.containers(spare["id"])}
    assert len(held) == 3

    # Its spare executors imported TensorFlow (the last job's framework) before the job came.
    before = "import sys\nbefore = 'tensorflow' in sys.modules\n"
    last = shell.run_cell_magic(
        "tony", "--workers 2 --no-tensorboard --pull history,replicas,before", before + MWMS
    )
    assert shell.user_ns["before"] is True
    rec = next(r for r in list_jobs() if r.id == spare["id"])
    assert json.loads((rec.dir / "yarn.json").read_text())["warm"] is True
    history = shell.user_ns["history"]
    assert shell.user_ns["replicas"] == 2 and last == history["loss"][-1] < history["loss"][0]
    assert cluster.wait_app_end(spare["id"], 60)["finalStatus"] == "SUCCEEDED"
    # Both tasks ran in the containers the warm AM held before the job came.
    tasks = open_client(rec).snapshot().tasks
    assert len(tasks) == 2 and {t.container for t in tasks} < held
    nxt = _warm_app(cluster)
    assert nxt["id"] != spare["id"]

    # Another shape: the warm AM is let go (its containers back to YARN), the job runs as usual.
    where = shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", WHERE)
    assert where[:2] == ("worker", 0)
    assert cluster.wait_app_end(nxt["id"], 60)["state"] == "KILLED"
    rec = max(list_jobs(), key=lambda r: r.dir.stat().st_mtime)
    assert "warm" not in json.loads((rec.dir / "yarn.json").read_text())


def test_an_unused_warm_am_gives_its_containers_back_by_itself(
    shell, cluster, monkeypatch, warm_on
):
    monkeypatch.setenv(warm.warm.YARN_IDLE, "5")
    shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", WHERE)
    spare = _warm_app(cluster)
    end = cluster.wait_app_end(spare["id"], 90)
    assert end["state"] == "FINISHED" and "not handed a job within 5 s" in end["diagnostics"]
    cluster.wait_nothing_left({spare["id"]})  # its staging directory went with it


def test_a_session_is_handed_to_the_warm_am_too(shell, cluster, warm_on):
    from tony_jupyter import session as sessions

    shell.run_cell_magic("tony", "--workers 2 --no-tensorboard", WHERE)
    spare = _warm_app(cluster)
    deadline = time.monotonic() + 120
    while warm.ready(warm.current()) < 2:
        assert time.monotonic() < deadline, "the warm AM's spare executors never came up"
        time.sleep(0.5)
    shell.run_line_magic("tony", "session start --workers 2 --no-tensorboard")
    try:
        assert sessions.current().job.job_id == spare["id"]
        assert shell.run_cell_magic("tony", "", "n = 41") is None
        assert shell.run_cell_magic("tony", "", "n + 1") == 42  # state kept between cells
    finally:
        shell.run_line_magic("tony", "session stop")
    assert cluster.wait_app_end(spare["id"], 60)["state"] == "FINISHED"
