"""Each framework's environment contract, built from the cluster spec the AM hands out: what its
own launcher would give a process, so user code needs no addresses of its own.

- every framework: TonY's ``CLUSTER_SPEC``, ``JOB_NAME``, ``TASK_INDEX``, ``TASK_NUM``;
- TensorFlow: ``TF_CONFIG`` (the evaluator is left out of its cluster, as TensorFlow expects);
- PyTorch: torch.distributed's ``env://`` contract as ``torchrun`` sets it, and TonY's
  ``INIT_METHOD``/``RANK``/``WORLD``; rank 0 (the chief, else worker:0) is the master, on the
  port it registered with the AM;
- JAX: ``JAX_COORDINATOR_ADDRESS`` (task 0's registered address), the process count and id,
  which :func:`install_jax_cluster` hands to ``jax.distributed.initialize()``, Keras 3's
  ``KERAS_DISTRIBUTION_*``, and gloo for collectives across processes on CPU.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys

from ..core.protocol import ExecutorEnv, parse_task_id
from ..core.protocol import task_id as make_task_id

# The order ranks are given in: the chief (if any) is rank 0, as in TensorFlow.
RANK_ORDER = ("chief", "worker")


def tony_env(task_id: str, cluster_spec: dict[str, list[str]]) -> dict[str, str]:
    """TonY's framework-neutral variables (its TaskExecutor's); TB_PORT is added on the chief
    (main.py reserves it)."""
    type_, index = parse_task_id(task_id)
    chief = make_task_id("chief" if cluster_spec.get("chief") else "worker", 0)
    return {
        "CLUSTER_SPEC": json.dumps(cluster_spec),
        "JOB_NAME": type_,
        "TASK_INDEX": str(index),
        "TASK_NUM": str(len(cluster_spec.get(type_, []))),
        "IS_CHIEF": "true" if task_id == chief else "false",  # Java's Boolean.toString
        "DISTRIBUTED_MODE": "GANG",  # every task starts together, with the whole cluster spec
    }


def tensorflow_env(task_id: str, cluster_spec: dict[str, list[str]]) -> dict[str, str]:
    type_, index = parse_task_id(task_id)
    tf_cluster = {k: v for k, v in cluster_spec.items() if k != "evaluator"}
    task = {"type": type_, "index": index}
    return {"TF_CONFIG": json.dumps({"cluster": tf_cluster, "task": task})}


def ranked_tasks(cluster_spec: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(task id, address) in rank order: the chief, then the workers by index."""
    return [
        (make_task_id(type_, i), addr)
        for type_ in RANK_ORDER
        for i, addr in enumerate(cluster_spec.get(type_, []))
    ]


def pytorch_env(
    task_id: str,
    cluster_spec: dict[str, list[str]],
    *,
    local_rank: int = 0,
    procs_per_task: int = 1,
    job_id: str = "",
    attempt: int = 1,
    max_attempts: int = 1,
) -> dict[str, str]:
    ranked = ranked_tasks(cluster_spec)
    group_rank = [tid for tid, _ in ranked].index(task_id)
    master_host, _, master_port = ranked[0][1].rpartition(":")
    rank = group_rank * procs_per_task + local_rank
    world = len(ranked) * procs_per_task
    env = {
        # torchrun's (torch.distributed.run) variables, as its elastic agent sets them
        "MASTER_ADDR": master_host,
        "MASTER_PORT": master_port,
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(procs_per_task),
        "GROUP_RANK": str(group_rank),
        "GROUP_WORLD_SIZE": str(len(ranked)),
        "ROLE_NAME": "default",
        "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world),
        "TORCHELASTIC_RUN_ID": job_id or "tony",
        "TORCHELASTIC_RESTART_COUNT": str(max(0, attempt - 1)),
        "TORCHELASTIC_MAX_RESTARTS": str(max(0, max_attempts - 1)),
        # TonY's PyTorch runtime: tony-examples/mnist-pytorch reads these
        "INIT_METHOD": f"tcp://{master_host}:{master_port}",
        "WORLD": str(world),
    }
    if procs_per_task > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"  # as torchrun: N processes must not each take every core
    return env


def jax_env(task_id: str, cluster_spec: dict[str, list[str]]) -> dict[str, str]:
    ranked = ranked_tasks(cluster_spec)
    process_id = [tid for tid, _ in ranked].index(task_id)
    coordinator = ranked[0][1]
    env = {
        "JAX_COORDINATOR_ADDRESS": coordinator,
        # JAX's coordinator service binds every interface unless told otherwise
        "JAX_COORDINATOR_BIND_ADDRESS": coordinator,
        "JAX_NUM_PROCESSES": str(len(ranked)),
        "JAX_PROCESS_ID": str(process_id),
        # keras.distribution.initialize() with no arguments (Keras 3 on JAX)
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": ",".join(addr for _, addr in ranked),
        "KERAS_DISTRIBUTION_NUM_PROCESSES": str(len(ranked)),
        "KERAS_DISTRIBUTION_PROCESS_ID": str(process_id),
    }
    if not os.environ.get("CUDA_VISIBLE_DEVICES"):
        # collectives across processes on CPU (older JAX has none by default)
        env.setdefault("JAX_CPU_COLLECTIVES_IMPLEMENTATION", "gloo")
    return env


def task_env(
    framework: str,
    task_id: str,
    cluster_spec: dict[str, list[str]],
    **pytorch: int | str,
) -> dict[str, str]:
    """The whole environment a task's process gets for ``framework``."""
    env = tony_env(task_id, cluster_spec)
    if framework == "pytorch":
        env.update(pytorch_env(task_id, cluster_spec, **pytorch))  # type: ignore[arg-type]
    elif framework == "jax":
        env.update(jax_env(task_id, cluster_spec))
    else:
        env.update(tensorflow_env(task_id, cluster_spec))
    return env


# --- jax.distributed.initialize() with no arguments ----------------------------------------


def register_jax_cluster() -> None:
    """Make this task a cluster JAX detects: ``jax.distributed.initialize()`` then reads the
    process count and id from the variables :func:`jax_env` set (the coordinator address it
    reads itself, from ``JAX_COORDINATOR_ADDRESS``). JAX detects every subclass of its
    ``ClusterEnv`` (as it does Slurm's or Open MPI's)."""
    try:
        from jax._src import clusters
    except ImportError as e:  # a JAX without that extension point: the values are in the env
        print(f"[tony] jax.distributed.initialize() needs its arguments here: {e}", flush=True)
        return

    class TonyCluster(clusters.ClusterEnv):
        name = "tony"

        @classmethod
        def is_env_present(cls) -> bool:
            return "JAX_PROCESS_ID" in os.environ and ExecutorEnv.var("task_id") in os.environ

        @classmethod
        def get_coordinator_address(cls, timeout_secs=None, override_coordinator_port=None):
            return os.environ["JAX_COORDINATOR_ADDRESS"]

        @classmethod
        def get_process_count(cls) -> int:
            return int(os.environ["JAX_NUM_PROCESSES"])

        @classmethod
        def get_process_id(cls) -> int:
            return int(os.environ["JAX_PROCESS_ID"])

    # Ahead of the others: a task on a Slurm or MPI node is still this job's task.
    clusters.ClusterEnv._cluster_types.remove(TonyCluster)
    clusters.ClusterEnv._cluster_types.insert(0, TonyCluster)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then()`` once module ``name`` has been imported (by the user's code): importing
    JAX ourselves before the cell would read its ``JAX_*`` settings before the cell sets them."""

    def __init__(self, name: str, then) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, then = spec.loader, self.then
        run = loader.exec_module

        def exec_module(module) -> None:
            run(module)
            then()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install_jax_cluster() -> None:
    if "jax" in sys.modules:
        register_jax_cluster()
    else:
        sys.meta_path.insert(0, _AfterImport("jax", register_jax_cluster))
