"""Everything a user does on the plain devcluster, on the Kerberized one, as alice: training,
`--shard` and `dataset("hdfs://...")` read with the job's delegation token, a kill, a worker
fault resumed from the HDFS checkpoint, and a warm session that outlives the tokens' maximum
lifetime (60 s here), which only new tokens from the kernel let it do."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pandas as pd
import pytest
from helpers.cells import CHECKPOINTED, MWMS, PS
from helpers.jobs import strike_when
from sklearn.datasets import load_digits

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn.secure import TokenKeeper

pytestmark = [pytest.mark.yarn, pytest.mark.secure, pytest.mark.slow]


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def test_mwms_trains_as_alice_with_tokens_only(digits, tony_home, secure):
    job = digits.run_cell_magic(
        "tony", "--workers 2 --memory 1280m --conf tony.am.memory=768m --async --pull history", MWMS
    )
    last = job.result(timeout=300)
    history = digits.user_ns["history"]
    assert last == history["loss"][-1] < history["loss"][0]
    app = secure.wait_app_end(job.job_id)
    assert (app["user"], app["finalStatus"]) == ("alice", "SUCCEEDED")
    (rec,) = list_jobs()
    log, _ = open_client(rec).logs("worker:1")
    assert "Epoch 3/3" in log


HDFS_CELL = """
import os, tony_jupyter
from tony_jupyter import data
from tony_jupyter.core import tokens
ds = data.dataset(URL, batch_size=50)
ids = sorted(int(i) for b in ds for i in b["id"].numpy())
simple_user = "HADOOP_USER_NAME" in os.environ
(sorted(shard["id"].tolist()), ids[:3], len(ids), bool(tokens.hdfs_token()), simple_user)
"""


def test_shard_and_hdfs_dataset_read_with_the_jobs_token(shell, tony_home, secure_cluster):
    import pyarrow as pa
    import pyarrow.parquet as pq

    alice = secure_cluster.session("alice")
    base = f"/user/alice/tony-secure-data-{os.getpid()}"
    url = f"{secure_cluster.webhdfs_url}/webhdfs/v1{base}"
    for i in range(2):
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table({"id": np.arange(i * 100, (i + 1) * 100)}), buf)
        r = alice.put(
            f"{url}/part-{i}.parquet",
            params={"op": "CREATE", "overwrite": "true"},
            allow_redirects=False,
            timeout=10,
        )
        assert r.status_code == 307, r.text
        assert alice.put(r.headers["Location"], data=buf.getvalue().to_pybytes(), timeout=30).ok
    try:
        shell.user_ns["shard"] = pd.DataFrame({"id": np.arange(10)})
        shell.user_ns["URL"] = f"{secure_cluster.fs_default_name.rstrip('/')}{base}"
        got = shell.run_cell_magic("tony", "--workers 2 --shard shard --no-tensorboard", HDFS_CELL)
    finally:
        alice.delete(url, params={"op": "DELETE", "recursive": "true"}, timeout=10)
    mine, first, count, has_token, simple_user = got
    assert set(mine) < set(range(10)) and mine  # the chief's own shard
    # the chief reads its half of 200 rows, as the plain cluster's test does
    assert count == 100 and first[0] in (0, 100)
    assert has_token and not simple_user


def test_alice_kills_her_job(shell, tony_home, secure):
    job = shell.run_cell_magic(
        "tony", "--workers 1 --async --no-tensorboard", "import time\ntime.sleep(300)\n"
    )
    deadline = time.monotonic() + 120
    while secure.app(job.job_id)["state"] != "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    shell.run_line_magic("tony", f"kill {job.job_id}")
    deadline = time.monotonic() + 60
    while secure.app(job.job_id)["state"] not in ("FINISHED", "KILLED", "FAILED"):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert open_client(list_jobs()[0]).snapshot().state == "KILLED"


def test_worker_fault_resumes_from_the_hdfs_checkpoint(digits, tony_home):
    job = digits.run_cell_magic(
        "tony",
        "--workers 2 --max-attempts 2 --memory 1g --async --no-tensorboard "
        "--pull first_epoch,attempt",
        CHECKPOINTED,
    )
    (rec,) = list_jobs()

    def kill_worker_1(snap):
        os.kill(snap.task("worker:1").pid, signal.SIGKILL)

    _, epoch = strike_when(rec, kill_worker_1)
    epochs_run = job.result(timeout=400)
    ns = digits.user_ns
    assert ns["attempt"] == 2
    # attempt 2 began where attempt 1's checkpoint (mirrored to HDFS with the token) left off
    assert 0 < ns["first_epoch"] <= epoch + 1 and epochs_run == 8 - ns["first_epoch"]


SESSION_CELL = """
import os
from tony_jupyter.core import tokens
hdfs = tokens.webhdfs_client(os.environ["TONY_WEBHDFS_URL"], None)
(len(hdfs.list("/user/alice/.tony-jupyter")) > 0, tokens.hdfs_token())
"""


def test_warm_session_outlives_the_tokens_max_lifetime(shell, tony_home, secure_cluster):
    shell.run_line_magic("tony", "session start --workers 1 --no-tensorboard")
    try:
        first = shell.run_cell_magic("tony", "", SESSION_CELL)
        assert first[0] is True
        app_id = list_jobs()[0].id
        max_life = secure_cluster.security.token_max_lifetime_s
        time.sleep(max_life + 5)  # the first tokens are dead now
        second = shell.run_cell_magic("tony", "", SESSION_CELL)
    finally:
        shell.run_line_magic("tony", "session stop")
    assert second[0] is True  # HDFS still answers the task, with a token it did not start with
    assert second[1] != first[1]
    assert TokenKeeper.get().renewals.get(app_id, 0) >= 1


def test_parameter_server_training_with_chief_worker_and_ps(digits, tony_home, secure):
    # Four containers with the AM: what the CPU node's 4 vcores hold (the gpu queue is not
    # alice's to use on the secure devcluster).
    last = digits.run_cell_magic(
        "tony",
        "--chief --workers 1 --ps 1 --memory 1g --conf tony.ps.memory=768m "
        "--conf tony.am.memory=768m --no-tensorboard --pull history,ps_devices",
        PS,
    )
    history = digits.user_ns["history"]
    assert digits.user_ns["ps_devices"] == 1
    assert last == history["loss"][-1] < history["loss"][0]
    assert secure.wait_app_end(list_jobs()[0].id)["finalStatus"] == "SUCCEEDED"


# The packages are the localized env's (sys.prefix is the venv assembled in the container
# over it where its interpreter goes with it).
PACKED = """
import os, sys, tony_jupyter
from tony_jupyter.core import tokens
(os.path.realpath(tony_jupyter.__file__).startswith(
    os.path.realpath(os.path.join(os.getcwd(), "env")) + "/"),
 bool(tokens.hdfs_token()))
"""


def test_pack_env_localizes_with_the_users_tokens(shell, tony_home, tmp_path_factory):
    from bench.staging import build_env

    venv = build_env(
        tmp_path_factory.mktemp("secure-packenv"),
        ["requests", "cloudpickle", "tornado", "psutil", "jpype1", "hdfs"],
    )
    in_env, has_token = shell.run_cell_magic(
        "tony", f"--workers 1 --no-tensorboard --no-src-dir --pack-env {venv}", PACKED
    )
    assert in_env and has_token
