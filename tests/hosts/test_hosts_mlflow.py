"""MLflow from a kernel on the edge host: the chief, on a worker host that shares no file with
the edge, logs the job as one run to a tracking server (a real `mlflow server`, of the full
``mlflow`` package in the test extra) that listens on the edge's own address, reached by the
edge's host name as a user would write it (http://edge:PORT); `doctor` checks that server from
the edge and from its probe container, and names a file store as one the nodes cannot see."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from conftest import exec_argv, on, on_edge  # tests/hosts/conftest.py

from tony_jupyter.core import supervise
from tony_jupyter_devcluster.hosts import EDGE, host_address

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
EXPERIMENT = "edge-digits"

# A port free on the edge's address, chosen there (the machine's own namespace is not the edge's).
_FREE_PORT = """
import socket, sys
with socket.socket() as s:
    s.bind((sys.argv[1], 0))
    print(s.getsockname()[1])
"""


def tracking_server(cluster, root: Path) -> tuple[supervise.Process, int]:
    """`mlflow server` on the edge host, bound to the edge's address only, its store (SQLite)
    and artifacts under ``root``; started in its own process group, which ``stop`` ends."""
    address = host_address(EDGE)
    got = on(cluster, EDGE, sys.executable, "-c", _FREE_PORT, address)
    assert got.returncode == 0, got.stderr
    port = int(got.stdout)
    server = [sys.executable, "-m", "mlflow", "server", "--host", address, "--port", str(port)]
    server += ["--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}"]
    server += ["--artifacts-destination", str(root / "artifacts")]
    server += ["--allowed-hosts", f"{EDGE}:{port},{address}:{port}"]  # the Host headers sent
    # No job runner (its consumer processes, its queue in /dev/shm): runs are all it stores here.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    argv = exec_argv(cluster, EDGE, *server)
    proc = supervise.start(argv, env=env, cwd=root, log=root / "server.log")
    return proc, port


def left_of(root: Path) -> list[str]:
    """Processes that still name ``root`` (the server's store) on their command line."""
    left = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if any(str(root) in a for a in p.info["cmdline"] or ()):
            left.append(f"{p.info['pid']}: {' '.join(p.info['cmdline'])}")
    return left


@pytest.mark.timeout(2400)  # run alone, it packs the venv first (a first job's minutes)
def test_the_chief_on_a_worker_host_logs_one_run_to_a_tracking_server_on_the_edge(
    hosts_cluster, node_venv, tmp_path
):
    root = tmp_path / "mlflow-server"
    root.mkdir()
    name = f"hosts-mlflow-{uuid.uuid4().hex[:6]}"
    server, port = tracking_server(hosts_cluster, root)
    try:
        uri = f"http://{EDGE}:{port}"
        env = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_EXPERIMENT_NAME": EXPERIMENT}
        _, out = on_edge(
            hosts_cluster,
            node_venv,
            tmp_path / "notebook",
            "edge_mlflow.py",
            name,
            str(hosts_cluster.hosts.python),
            result=name,
            env=env,
            timeout=2000,
        )
        log = (root / "server.log").read_text()[-2000:]
        assert server.poll() is None, f"the tracking server exited: {log}"
    finally:
        server.stop(grace=10)
    assert not left_of(root), left_of(root)
    assert "error" not in out, out["error"]
    assert out["kernel_host"] == EDGE and out["uri"] == uri

    # doctor, from the edge: the server answers there and its probe's node reaches it
    doctor = out["doctor"]["text"]
    assert out["doctor"]["ok"], doctor
    assert "pass  mlflow tracking" in doctor and f"{uri} answers" in doctor, doctor
    assert "pass  node -> MLflow tracking server" in doctor and f"{EDGE}:{port} in" in doctor
    file_store = out["doctor_file_store"]["text"]
    assert not out["doctor_file_store"]["ok"], file_store
    assert "FAIL  mlflow tracking" in file_store, file_store
    assert "(worker1, worker2, worker3) are other hosts" in file_store, file_store
    assert "fix: run an MLflow tracking server the nodes reach" in file_store, file_store

    # the job: one run named after it, finished, its spec as parameters (tests/test_mlflow.py's)
    (run,) = out["runs"]  # one run for the job, not one per task
    assert run["name"] == name and run["status"] == "FINISHED", run
    assert run["params"]["worker.instances"] == "2", run["params"]
    assert run["params"]["framework"] == "tensorflow", run["params"]
    assert run["tags"]["tony.job_id"] == out["job_id"], run["tags"]
    # every batch's loss, by step (3 epochs of 8 batches), ending at the cell's value
    history = out["loss"]
    steps = sorted({step for step, _, _ in history})
    assert steps[0] == 1 and steps[-1] == 24 and len(steps) >= 24, steps
    last = max(history, key=lambda m: (m[0], m[2]))
    assert last[1] == pytest.approx(out["value"], rel=1e-3)
    first = min(history, key=lambda m: (m[0], m[2]))
    assert first[1] > out["value"]
    print(
        json.dumps(
            {
                "job_seconds": out["seconds"],
                "loss_points": len(history),
                "server_answered_s": out["server_answered_s"],
                "doctor_s": out["doctor"]["seconds"],
            }
        )
    )
