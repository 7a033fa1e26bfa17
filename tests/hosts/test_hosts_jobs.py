"""Jobs from a kernel on the edge host of a several-host cluster: the kernel's venv is not on
the workers, so the job's Python gets there with --pack-env, from a venv whose base interpreter
is the nodes' own."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import nodeenv  # tests/hosts/nodeenv.py
import pytest
from conftest import on  # tests/hosts/conftest.py

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
# What the AM and a TensorFlow task import; tf-keras: tasks run tf.keras as Keras 2.
ROOTS = ["tensorflow", "tf-keras", "requests", "cloudpickle", "tornado", "psutil", "jpype1", "hdfs"]
# The cell's result comes back before the AM has unregistered: wait for the app's end.
_APP = """
import json, os, sys, time, requests
rm = os.environ["TONY_DEVCLUSTER_RM_URL"]
deadline = time.monotonic() + 120
while True:
    app = requests.get(f"{rm}/ws/v1/cluster/apps/{sys.argv[1]}", params={"user.name": "root"},
                       timeout=10).json()["app"]
    if app["state"] in ("FINISHED", "FAILED", "KILLED") or time.monotonic() > deadline:
        break
    time.sleep(1)
print(json.dumps([app["state"], app["finalStatus"]]))
"""


@pytest.fixture(scope="module")
def node_venv(tmp_path_factory, hosts_cluster):
    return nodeenv.build(tmp_path_factory.mktemp("nodeenv"), hosts_cluster.hosts.python, ROOTS)


def _edge_job(cluster, venv: Path, notebook: Path, name: str) -> dict:
    cmd = [sys.executable, "-m", "tony_jupyter.devcluster", "exec", "--dir", str(cluster.dir)]
    script = [sys.executable, "edge_job.py", str(venv), name]
    env = {**os.environ, "TONY_JUPYTER_HOME": str(notebook.parent / "tony-home")}
    res = subprocess.run(
        [*cmd, "edge", "--", *script],
        cwd=notebook,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # The job's own summary (from its follower thread) may be printed after the script's line.
    (line,) = [x for x in res.stdout.splitlines() if x.startswith('{"kernel_host"')]
    out = json.loads(line)
    app = on(cluster, "edge", sys.executable, "-c", _APP, out["job_id"])
    assert json.loads(app.stdout) == ["FINISHED", "SUCCEEDED"], app.stdout + app.stderr
    return out


# The first job packs about 2 GB (TensorFlow) on the kernel's side: minutes on 2 busy cores.
@pytest.mark.timeout(2400)
def test_mwms_from_a_kernel_on_the_edge_runs_on_workers_without_its_venv(
    hosts_cluster, node_venv, tmp_path
):
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    shutil.copy(HERE / "edge_job.py", notebook)
    run = uuid.uuid4().hex[:6]
    first = _edge_job(hosts_cluster, node_venv, notebook, f"hosts-mwms-{run}-1")
    assert first["kernel_host"] == "edge"
    assert first["where"] in ("worker1", "worker2")
    assert first["replicas"] == 2
    assert math.isfinite(first["loss"])
    # The task ran the shipped venv on the nodes' own interpreter: nothing of the kernel's.
    assert first["python"] == str(hosts_cluster.hosts.python)
    assert first["pack_env"]["bytes_uploaded"] > 0
    second = _edge_job(hosts_cluster, node_venv, notebook, f"hosts-mwms-{run}-2")
    assert second["pack_env"]["bytes_uploaded"] == 0
    assert second["pack_env"]["hash"] == first["pack_env"]["hash"]
    print(json.dumps({"first": first, "second": second}))
