"""What of the notebook's environment a job's processes get: none of the Jupyter server's, and
a local task none of the notebook side's own (:data:`NOT_FOR_TASKS`) unless its job asks.

A kernel inherits its server's environment: ``JUPYTER_TOKEN``, JupyterHub's
``JUPYTERHUB_API_TOKEN`` / ``JPY_API_TOKEN``, ``JUPYTER_RUNTIME_DIR`` (where ``jpserver-*.json``
with the server's token and the kernels' connection files are). A job's code is not the
notebook (README, "Threat model"): its AM and tasks start without any of these, and a local
task's ``JUPYTER_RUNTIME_DIR`` is an empty directory of its job's own, so Jupyter's own
discovery (``jupyter server list``, ``list_running_servers()``) finds nothing from a task.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# JUPYTER_* is Jupyter's (jupyter_core, jupyter_server, JupyterHub's JUPYTERHUB_*), JPY_* the
# server's and JupyterHub's (JPY_API_TOKEN, JPY_SESSION_NAME, JPY_PARENT_PID).
JUPYTER_PREFIXES = ("JUPYTER", "JPY_")
RUNTIME_DIR = "JUPYTER_RUNTIME_DIR"


# The notebook side's, in the environment a local AM starts with, but not a task's: where the
# job records and their tokens are (TONY_JUPYTER_HOME: nothing in a task reads it, and a task
# handed the path reads the job's token there), and MLflow's credentials, which a job forwards
# only when asked (tony.containers.envs): a YARN task never sees the notebook's either.
NOT_FOR_TASKS = (
    "TONY_JUPYTER_HOME",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
)


def for_task(host: Mapping[str, str], job: Mapping[str, str]) -> dict[str, str]:
    """A local task's environment: its host's (the AM's) without the Jupyter server's and the
    notebook side's own variables, then its job's (tony.containers.envs, what it asked for)."""
    base = {k: v for k, v in host.items() if k not in NOT_FOR_TASKS}
    return without_jupyter({**base, **job})


def without_jupyter(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the Jupyter server's variables (its token, its runtime directory)."""
    return {k: v for k, v in env.items() if not k.upper().startswith(JUPYTER_PREFIXES)}


def private_runtime_dir(job_dir: Path) -> str:
    """An empty ``JUPYTER_RUNTIME_DIR`` in the job's directory, for its local tasks."""
    d = job_dir / "jupyter-runtime"
    d.mkdir(mode=0o700, exist_ok=True)
    return str(d)
