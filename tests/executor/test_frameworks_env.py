"""Each framework's environment, as its own launcher would set it, from the cluster spec."""

import json
import os
import subprocess
import sys

import pytest

from tony_jupyter.executor.frameworkenv import jax_env, pytorch_env, task_env

SPEC = {"chief": ["h0:1000"], "worker": ["h1:1001", "h2:1002"]}


def test_pytorch_ranks_start_at_the_chief_and_master_is_rank_zero():
    env = pytorch_env("worker:1", SPEC, job_id="job-1", attempt=2, max_attempts=3)
    assert env["MASTER_ADDR"] == "h0" and env["MASTER_PORT"] == "1000"
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == (
        "2",
        "3",
        "0",
        "1",
    )
    assert env["GROUP_RANK"] == "2" and env["GROUP_WORLD_SIZE"] == "3"
    assert env["ROLE_RANK"] == "2" and env["ROLE_WORLD_SIZE"] == "3"
    assert env["TORCHELASTIC_RUN_ID"] == "job-1"
    assert env["TORCHELASTIC_RESTART_COUNT"] == "1" and env["TORCHELASTIC_MAX_RESTARTS"] == "2"
    # TonY's PyTorch runtime's names
    assert env["INIT_METHOD"] == "tcp://h0:1000" and env["WORLD"] == "3"
    assert "TORCHELASTIC_USE_AGENT_STORE" not in env  # rank 0 serves the store itself


def test_pytorch_processes_per_task_get_their_local_ranks(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spec = {"worker": ["h1:1", "h2:2"]}
    env = pytorch_env("worker:1", spec, local_rank=1, procs_per_task=4)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["GROUP_RANK"]) == (
        "5",
        "8",
        "1",
        "1",
    )
    assert env["LOCAL_WORLD_SIZE"] == "4" and env["OMP_NUM_THREADS"] == "1"  # as torchrun


def test_jax_gets_the_coordinator_count_and_id_and_cpu_collectives(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    env = jax_env("worker:0", SPEC)
    assert env["JAX_COORDINATOR_ADDRESS"] == "h0:1000" == env["JAX_COORDINATOR_BIND_ADDRESS"]
    assert (env["JAX_NUM_PROCESSES"], env["JAX_PROCESS_ID"]) == ("3", "1")
    assert env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] == "h0:1000,h1:1001,h2:1002"
    assert env["JAX_CPU_COLLECTIVES_IMPLEMENTATION"] == "gloo"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert "JAX_CPU_COLLECTIVES_IMPLEMENTATION" not in jax_env("worker:0", SPEC)


def test_every_framework_keeps_tonys_variables_and_only_tensorflow_gets_tf_config():
    for framework in ("tensorflow", "pytorch", "jax"):
        env = task_env(framework, "worker:1", SPEC)
        assert json.loads(env["CLUSTER_SPEC"]) == SPEC
        assert (env["JOB_NAME"], env["TASK_INDEX"], env["TASK_NUM"]) == ("worker", "1", "2")
        assert ("TF_CONFIG" in env) == (framework == "tensorflow")
    tf = json.loads(
        task_env("tensorflow", "evaluator:0", {**SPEC, "evaluator": ["e:1"]})["TF_CONFIG"]
    )
    assert "evaluator" not in tf["cluster"] and tf["task"] == {"type": "evaluator", "index": 0}


def test_jax_detects_the_task_once_the_cell_imports_it():
    """jax.distributed.initialize() with no arguments finds the count and id: the cluster is
    registered when jax is imported, not before (a fresh interpreter, as a task is)."""
    pytest.importorskip("jax", reason="jax is not installed: pip install -e '.[test]'")
    code = """
import sys
from tony_jupyter.executor.frameworkenv import install_jax_cluster
install_jax_cluster()
assert "jax" not in sys.modules
import jax
from jax._src import clusters
print(clusters.ClusterEnv.auto_detect_unset_distributed_params(None, None, None, None, None, 1))
"""
    env = dict(
        os.environ,
        TONY_TASK_ID="worker:1",
        **{k: v for k, v in jax_env("worker:1", SPEC).items() if k.startswith("JAX_")},
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "('h0:1000', 3, 2, None)"  # the chief coordinates
