"""The devcluster against itself: real daemons, real REST calls, a real YARN application."""

from __future__ import annotations

import getpass
import sys
import time

import psutil
import pytest
import requests
from devcluster_ds import container_dirs, container_output, submit, wait_end

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.config import NM2_GPUS, NM2_VCORES, NM_MEMORY_MB, NM_VCORES
from tony_jupyter_devcluster.ready import node_labels, resource_value, rm_nodes
from tony_jupyter_devcluster.testing import started_by_fixture

pytestmark = pytest.mark.yarn

PRINT_PYTHON = "python -c 'import sys; print(sys.prefix)'"


def _am_container(app_id: str) -> str:
    return "container_" + app_id.removeprefix("application_") + "_01_000001"


def test_two_nodemanagers_with_declared_resources(devcluster: DevCluster) -> None:
    nodes = {int(n["id"].rsplit(":", 1)[1]): n for n in rm_nodes(devcluster.rm_url)}
    ports = devcluster.layout.ports
    nm1, nm2 = nodes[ports("nm1")["rpc"]], nodes[ports("nm2")["rpc"]]
    for node in (nm1, nm2):
        assert node["state"] == "RUNNING"
        assert node["totalResource"]["memory"] == NM_MEMORY_MB
    assert nm1["totalResource"]["vCores"] == NM_VCORES
    assert nm2["totalResource"]["vCores"] == NM2_VCORES
    assert resource_value(nm1["totalResource"], "yarn.io/gpu") == 0
    assert resource_value(nm2["totalResource"], "yarn.io/gpu") == NM2_GPUS == 8
    assert node_labels(nm1) == []
    assert node_labels(nm2) == ["gpu"]


def test_scheduler_has_default_and_gpu_queues(devcluster: DevCluster) -> None:
    info = requests.get(f"{devcluster.rm_url}/ws/v1/cluster/scheduler", timeout=10).json()
    queues = info["scheduler"]["schedulerInfo"]["queues"]["queue"]
    assert sorted(q["queueName"] for q in queues) == ["default", "gpu"]


def test_webhdfs_write_and_read(devcluster: DevCluster) -> None:
    user = getpass.getuser()
    url = f"{devcluster.webhdfs_url}/webhdfs/v1/tmp/devcluster-test/hello.txt"
    payload = b"hello, hdfs\n" * 1000
    created = requests.put(
        url, params={"op": "CREATE", "overwrite": "true", "user.name": user}, data=payload
    )
    assert created.status_code == 201, created.text
    read = requests.get(url, params={"op": "OPEN", "user.name": user})
    assert read.content == payload
    # The DataNode redirect stays on loopback (dfs.datanode.hostname).
    redirect = requests.get(url, params={"op": "OPEN"}, allow_redirects=False)
    assert redirect.status_code == 307
    dn_http = devcluster.layout.ports("datanode")["http"]
    assert redirect.headers["Location"].startswith(f"http://127.0.0.1:{dn_http}/")


@pytest.mark.parametrize(
    ("service", "path"),
    [
        ("resourcemanager", "/cluster/nodes"),
        ("namenode", "/dfshealth.html"),
        ("namenode", "/explorer.html"),
        ("datanode", "/datanode.html"),
        ("nm1", "/node"),
        ("nm2", "/node"),
    ],
)
def test_web_uis(devcluster: DevCluster, service: str, path: str) -> None:
    port = devcluster.layout.ports(service)["http"]
    resp = requests.get(f"http://127.0.0.1:{port}{path}", timeout=10)
    assert resp.status_code == 200


def test_distributed_shell_on_cpu_node(devcluster: DevCluster, tmp_path) -> None:
    """A plain request in the default queue runs on nm1, and `python` in the container is this
    interpreter's environment."""
    app_id = submit(devcluster, tmp_path, PRINT_PYTHON)
    app = wait_end(devcluster, app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app["diagnostics"]
    placed = container_dirs(devcluster, app_id)
    workers = [c for c in placed if c != _am_container(app_id)]
    assert len(workers) == 1
    assert placed[workers[0]] == "nm1"
    assert container_output(devcluster, app_id, workers[0], "stdout").strip() == sys.prefix
    # The RM's web proxy answers for the app (a finished one redirects to its RM page).
    proxied = requests.get(f"{devcluster.rm_url}/proxy/{app_id}/", timeout=10)
    assert proxied.status_code == 200
    assert app_id in proxied.url


def test_gpu_request_lands_on_gpu_node(devcluster: DevCluster, tmp_path) -> None:
    app_id = submit(
        devcluster,
        tmp_path,
        "echo $CONTAINER_ID",
        queue="gpu",
        node_label="gpu",
        container_resources="memory-mb=128,vcores=1,yarn.io/gpu=1",
        num_containers=2,
    )
    app = wait_end(devcluster, app_id)
    assert (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED"), app["diagnostics"]
    placed = container_dirs(devcluster, app_id)
    workers = {c: nm for c, nm in placed.items() if c != _am_container(app_id)}
    assert sorted(workers.values()) == ["nm2", "nm2"]


def test_second_up_says_already_running(devcluster: DevCluster, capsys) -> None:
    assert main(["up", "--dir", str(devcluster.dir)]) == 0
    out, err = capsys.readouterr()
    assert "already running" in err
    assert f"export HADOOP_CONF_DIR={devcluster.conf_dir}" in out
    assert main(["status", "--dir", str(devcluster.dir)]) == 0
    out, _ = capsys.readouterr()
    for name in ("namenode", "datanode", "resourcemanager", "nm1", "nm2"):
        assert name in out


def test_down_leaves_no_process(devcluster: DevCluster, tmp_path) -> None:
    """`down` stops the daemons and the containers they run; `up` brings it all back."""
    if not started_by_fixture(devcluster):
        pytest.skip(f"the devcluster in {devcluster.dir} was already running; not stopping it")
    app_id = submit(devcluster, tmp_path, "sleep 300")
    deadline = time.monotonic() + 180
    while len(container_dirs(devcluster, app_id)) < 2:
        assert time.monotonic() < deadline, "the sleep container never started"
        time.sleep(0.2)
    pids = [row["pid"] for row in devcluster.status()]
    family = []
    for pid in pids:
        proc = psutil.Process(pid)
        family += [proc, *proc.children(recursive=True)]
    assert len(family) > len(pids)  # the AM and the sleep container
    try:
        devcluster.down()
        gone, alive = psutil.wait_procs(family, timeout=5)
        assert not alive
        assert not any(devcluster.layout.run.glob("*.pid"))
        assert not devcluster.is_running()
    finally:
        devcluster.up()
