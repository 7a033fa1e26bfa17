"""Jobs from a kernel on the edge host of a several-host cluster: the kernel's venv is not on
the workers, so the job's Python gets there by default (no flag: the venv is packed because the
nodes are other hosts), from a venv whose base interpreter is the nodes' own."""

from __future__ import annotations

import json
import math
import re
import sys
import uuid
from pathlib import Path

import pytest
from conftest import on, on_edge  # tests/hosts/conftest.py

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
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


def _edge_job(cluster, venv: Path, notebook: Path, name: str) -> dict:
    res, out = on_edge(cluster, venv, notebook, "edge_job.py", name, result=name)
    assert "are other hosts: this kernel's venv" in res.stderr  # said, not silent
    if "error" in out:
        return out
    app = on(cluster, "edge", sys.executable, "-c", _APP, out["job_id"])
    assert json.loads(app.stdout) == ["FINISHED", "SUCCEEDED"], app.stdout + app.stderr
    return out


# The first job packs about 2 GB (TensorFlow) on the kernel's side: minutes on 2 busy cores.
@pytest.mark.timeout(2400)
def test_mwms_from_a_kernel_on_the_edge_runs_on_workers_without_its_venv(
    hosts_cluster, node_venv, tmp_path
):
    notebook = tmp_path / "notebook"
    run = uuid.uuid4().hex[:6]
    first = _edge_job(hosts_cluster, node_venv, notebook, f"hosts-mwms-{run}-1")
    assert "error" not in first, first
    assert first["kernel_host"] == "edge"
    assert first["where"] in ("worker1", "worker2")
    assert first["replicas"] == 2
    assert math.isfinite(first["loss"])
    # The task ran the shipped venv on the nodes' own interpreter: nothing of the kernel's.
    assert first["python"] == str(hosts_cluster.hosts.python)
    assert first["pack_env"]["bytes_uploaded"] > 0
    second = _edge_job(hosts_cluster, node_venv, notebook, f"hosts-mwms-{run}-2")
    assert "error" not in second, second
    assert second["pack_env"]["bytes_uploaded"] == 0
    assert second["pack_env"]["hash"] == first["pack_env"]["hash"]
    print(json.dumps({"first": first, "second": second}))


# What is left on the cluster of the applications named NAME, and in the user's staging root.
_LEFT = """
import json, os, sys, requests
rm, fs = os.environ["TONY_DEVCLUSTER_RM_URL"], os.environ["TONY_DEVCLUSTER_WEBHDFS_URL"]
q = {"user.name": "root"}
apps = (requests.get(f"{rm}/ws/v1/cluster/apps", params=q, timeout=10).json()["apps"] or {})
live = [a["id"] for a in apps.get("app", []) if a["name"] == sys.argv[1]
        and a["state"] not in ("FINISHED", "FAILED", "KILLED")]
r = requests.get(f"{fs}/webhdfs/v1/user/root/.tony-jupyter", params={**q, "op": "LISTSTATUS"},
                 timeout=10).json()
staged = [s["pathSuffix"] for s in r.get("FileStatuses", {}).get("FileStatus", [])
          if s["pathSuffix"].startswith("application_")]
print(json.dumps({"live": live, "staged": staged}))
"""


@pytest.mark.timeout(2400)  # run alone, it packs the venv first (the test above did, in a run)
def test_a_blocked_way_from_the_edge_to_the_nodes_is_named_not_waited_out(
    hosts_cluster, node_venv, tmp_path
):
    # A firewall between the notebook's host and the nodes' ephemeral ports (where a job's AM
    # and TensorBoard listen): the masters and the DataNodes stay reachable.
    workers = "198.18.0.16/28"  # worker1 (.21), worker2 (.22), worker3 (.23), not the master (.11)
    block = ["to", workers, "ipproto", "tcp", "dport", "32768-60999", "prohibit", "pref", "100"]
    added = on(hosts_cluster, "edge", "ip", "rule", "add", *block)
    assert added.returncode == 0, added.stderr
    try:
        doc = on(
            hosts_cluster,
            "edge",
            str(node_venv / "bin" / "python"),
            "-m",
            "tony_jupyter.cli",
            "doctor",
            "--python",
            str(hosts_cluster.hosts.python),
        )
        assert doc.returncode == 1, doc.stdout + doc.stderr
        assert "FAIL  notebook host -> node" in doc.stdout, doc.stdout
        assert "pass  hdfs" in doc.stdout and "pass  resourcemanager" in doc.stdout, doc.stdout
        notebook = tmp_path / "notebook"
        name = f"hosts-blocked-{uuid.uuid4().hex[:6]}"
        out = _edge_job(hosts_cluster, node_venv, notebook, name)
    finally:
        on(hosts_cluster, "edge", "ip", "rule", "del", *block)
    error = out["error"]
    # (A job quicker than the wait's 10 s ends meanwhile: "was up", and its final state.)
    assert re.search(r"the job's AM (is|was) up at worker", error), error
    assert "but this host (edge) cannot reach it: [Errno 13] Permission denied" in error, error
    assert "did not start within" not in error
    app_id = re.search(r"\((application_\d+_\d+)[ ,]", error).group(1)
    left = json.loads(on(hosts_cluster, "edge", sys.executable, "-c", _LEFT, name).stdout)
    assert left["live"] == [] and app_id not in left["staged"], left
    print(json.dumps({"blocked_job_failed_after_s": out["seconds"], "doctor": doc.stdout}))


@pytest.mark.timeout(2400)  # run alone, it packs the venv first
def test_ps_shard_hdfs_data_session_warm_am_tensorboard_and_history_from_the_edge(
    hosts_cluster, node_venv, tmp_path
):
    name = f"hosts-features-{uuid.uuid4().hex[:6]}"
    _, out = on_edge(
        hosts_cluster,
        node_venv,
        tmp_path / "notebook",
        "edge_features.py",
        name,
        result=name,
        timeout=2000,
    )
    print(json.dumps({k: v.get("seconds") for k, v in out.items()}))
    errors = {k: v["error"] for k, v in out.items() if "error" in v}
    assert not errors, "\n".join(f"{k}: {v}" for k, v in errors.items())
    ps = out["ps"]
    assert ps["ps_devices"] == 1 and ps["losses_finite"] and ps["epochs"] == 2, ps
    assert ps["final"] == ["FINISHED", "SUCCEEDED"], ps
    shares = out["shard"]["shares"]
    assert {s["task"] for s in shares} == {"worker:0", "worker:1"}
    assert all(s["host"] == "worker1" for s in shares), shares  # the default queue's node
    for key, n in (("arr", out["shard"]["n"]), ("hdfs", out["shard"]["hdfs_rows"])):
        a, b = (set(s[key]) for s in shares)
        assert a and b and not a & b and a | b == set(range(n)), (key, shares)
    session = out["session"]
    assert session["handed_to_warm_am"] and session["cells"] == [None, 42], session
    assert session["warm_app_end"] == "FINISHED", session
    tb = out["tensorboard"]
    assert "/proxy/application_" in tb["tracking"] and isinstance(tb["runs"], list), tb
    assert tb["page_ok"] and tb["final"] == "SUCCEEDED", tb
    hist = out["history"]
    assert hist["where"] == "history" and hist["state"] == "SUCCEEDED", hist
    assert hist["name"] == "edge-ps" and "SUCCEEDED" in hist["status"], hist
    assert "Epoch 2/2" in hist["log"], hist  # the chief's log, from HDFS: this home is empty


# A second TensorFlow venv (2 GB) to pack: minutes on 2 busy cores.
@pytest.mark.timeout(2400)
def test_a_venv_on_the_kernels_pyenv_python_trains_on_workers_that_have_none(
    hosts_cluster, tmp_path_factory, tmp_path
):
    import os

    import nodeenv  # tests/hosts/nodeenv.py

    # This machine's default python3 is pyenv's (~/.pyenv, hidden from the workers): a venv
    # made from it, as a data scientist's is. Its interpreter goes with it.
    base = Path(os.path.realpath(sys.base_prefix))
    python = base / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    venv = nodeenv.build(tmp_path_factory.mktemp("pyenvenv"), python, nodeenv.ROOTS)
    name = f"hosts-pyenv-{uuid.uuid4().hex[:6]}"
    res, out = on_edge(hosts_cluster, venv, tmp_path / "notebook", "edge_job.py", name, result=name)
    assert "error" not in out, (out, res.stderr[-3000:])
    assert f"the venv's Python {base} goes with the job" in res.stderr
    assert out["where"] in ("worker1", "worker2") and out["replicas"] == 2
    assert math.isfinite(out["loss"])
    # The task's interpreter is the localized copy, not a path under the edge's home.
    assert "filecache" in out["python"] and not out["python"].startswith(str(base))
    assert out["pack_env"]["interpreter"]["size"] > 1 << 20
    print(json.dumps(out))


@pytest.mark.timeout(2400)  # packs a venv without TensorFlow (470 MB) first
def test_a_users_package_installed_editable_imports_in_every_task(
    hosts_cluster, tmp_path_factory, tmp_path
):
    import nodeenv  # tests/hosts/nodeenv.py

    from tony_jupyter_devcluster.hosts import node_python

    python = node_python()
    assert python is not None, "the machine has no interpreter of the kernel's version"
    root = tmp_path_factory.mktemp("editableenv")
    venv = nodeenv.build(root, python, nodeenv.BASE_ROOTS)
    # the user's project, under the edge's /tmp (hidden from the workers), installed editable
    pkg = root / "userproj" / "src" / "userpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHERE = 'the user project'\n")
    (pkg / ".env").write_text("TOKEN=not-for-the-cluster\n")
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "_userpkg.pth").write_text(str(pkg.parent))  # as hatchling writes it
    name = f"hosts-editable-{uuid.uuid4().hex[:6]}"
    res, out = on_edge(hosts_cluster, venv, tmp_path / "nb", "edge_editable.py", name, result=name)
    assert "error" not in out, (out, res.stderr[-3000:])
    assert out["where"] == out["kernel_where"] == "the user project"
    assert out["host"] in ("worker1", "worker2") and "filecache" in out["path"], out
    assert "userpkg/.env: may hold credentials" in res.stderr  # left out, said
