"""PyTorch DDP with --procs-per-task, JAX, the panel's REST API and TensorBoard through the
server extension's proxy, from a kernel and a Jupyter server on the edge host of a several-host
cluster. One cluster and one edge run (edge_frameworks.py) for all of it, two jobs: the DDP job
is also the one the panel and the proxy watch.

The jobs run in a node venv of their own (nodeenv.FRAMEWORK_ROOTS: torch and JAX, no
TensorFlow, of torch's CUDA wheels only the libraries it links to), so that the TensorFlow venv
of the other modules stays as small as it is; --pack-env ships it, as it would a notebook's.
Both jobs and their AMs run on worker1 (the default queue's node), so one node localizes it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from conftest import on_edge  # tests/hosts/conftest.py

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
PUBLIC = {"worker1": "198.18.0.21"}  # on the bridge, not on worker1's private net


@pytest.fixture(scope="module")
def framework_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import nodeenv  # tests/hosts/nodeenv.py

    from tony_jupyter_devcluster.hosts import node_python

    python = node_python()
    if python is None:
        pytest.fail("the machine has no interpreter of the kernel's version for the nodes")
    root = tmp_path_factory.mktemp("frameworkenv")
    roots, omit = nodeenv.FRAMEWORK_ROOTS, nodeenv.FRAMEWORK_OMIT
    return nodeenv.build(root, python, roots, omit, linked_only=nodeenv.CUDA)


@pytest.fixture(scope="module")
def edge_run(hosts_cluster, framework_venv, tmp_path_factory) -> dict:
    notebook = tmp_path_factory.mktemp("frameworks") / "notebook"
    name = f"hosts-frameworks-{uuid.uuid4().hex[:6]}"
    _, out = on_edge(
        hosts_cluster,
        framework_venv,
        notebook,
        "edge_frameworks.py",
        name,
        result=name,
        timeout=2000,
    )
    print(json.dumps({k: v.get("seconds") for k, v in out.items()}))
    return out


def _ok(out: dict, step: str) -> dict:
    assert "error" not in out[step], out[step]["error"]
    return out[step]


# The first job packs and ships the venv (about 2 GB unpacked) and each node localizes it.
@pytest.mark.timeout(2400)
def test_ddp_with_procs_per_task_from_the_edge_runs_on_a_worker_host(edge_run):
    ddp = _ok(edge_run, "ddp")
    assert ddp["final"] == ["FINISHED", "SUCCEEDED"], ddp
    ranks = ddp["ranks"]
    # 2 tasks x 2 processes: ranks 0-3, local ranks 0 and 1 in each task, all on worker1 (the
    # default queue's node), each of which all-reduced 0+1+2+3.
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3], ranks
    assert [(r["task"], r["local"]) for r in ranks] == [
        ("worker:0", 0),
        ("worker:0", 1),
        ("worker:1", 0),
        ("worker:1", 1),
    ], ranks
    assert all(r["world"] == 4 and r["sum"] == 6.0 for r in ranks), ranks
    assert {r["host"] for r in ranks} == {"worker1"}, ranks
    # The rendezvous is worker:0's address on the bridge, which every rank reached (the
    # all-reduce above went through the process group it made), not loopback or the private net.
    assert len({(r["master"], r["master_ip"]) for r in ranks}) == 1, ranks
    host, port = ranks[0]["master"].rsplit(":", 1)
    assert host in ("worker1", PUBLIC["worker1"]) and int(port) > 0, ranks
    assert ranks[0]["master_ip"] == PUBLIC["worker1"], ranks
    print(json.dumps({k: ddp[k] for k in ("pack_env", "am_up_s", "submitted_to_running_s")}))


@pytest.mark.timeout(2400)
def test_the_panel_api_and_tensorboard_proxy_of_a_jupyter_server_on_the_edge(edge_run):
    ddp = _ok(edge_run, "ddp")
    # While the job ran: the panel's list and the job's tasks, from the server on the edge.
    assert ddp["row"]["backend"] == "yarn" and ddp["row"]["name"] == "edge-ddp", ddp["row"]
    assert ddp["row"]["endpoints"] == ["tensorboard"], ddp["row"]
    assert ddp["tasks"] == {
        "worker:0": ["RUNNING", "worker1"],
        "worker:1": ["RUNNING", "worker1"],
    }, ddp["tasks"]
    # Rank 0's report() (from worker:0's first process) reached the panel.
    assert ddp["progress"]["step"] == ddp["progress"]["total_steps"] == 20, ddp["progress"]
    assert ddp["am_host"].startswith("worker1:"), ddp["am_host"]
    # TensorBoard (in worker:0's container on worker1) through /tony/proxy/<job>/tensorboard/,
    # the iframe's path; Jupyter's auth in front of it.
    assert isinstance(ddp["proxy_runs"], list) and ddp["proxy_page_ok"], ddp
    assert ddp["anonymous_status"] in (302, 403), ddp
    assert ddp["state_after"] == "SUCCEEDED", ddp


@pytest.mark.timeout(2400)
def test_jax_distributed_from_the_edge_runs_on_a_worker_host(edge_run):
    jax = _ok(edge_run, "jax")
    assert jax["final"] == ["FINISHED", "SUCCEEDED"], jax
    seen = jax["seen"]  # the chief's: process 0 of 2; the psum added 1 + 2
    assert (seen["pid"], seen["n"], seen["total"]) == (0, 2, 3.0), seen
    assert seen["task"] == "worker:0" and seen["hosts"] == ["worker1", "worker1"], seen
    # The coordinator: task 0's address on the bridge, reached by process 1 (the psum).
    host, port = seen["coordinator"].rsplit(":", 1)
    assert host in ("worker1", PUBLIC["worker1"]) and int(port) > 0, seen
    assert seen["coordinator_ip"] == PUBLIC["worker1"], seen
