"""The job as one MLflow run, logged by the chief: when ``mlflow`` is importable in the task and
a tracking URI is set (``MLFLOW_TRACKING_URI``, forwarded from the notebook's environment by
spec.py), the chief starts a run named after the job, logs the job's spec as parameters,
every ``report()`` / ``progress()`` metric as it arrives, and ends the run with the cell's
outcome. Nothing is imported, and nothing happens, when either is missing.

MLflow is a convenience here: a tracking server that fails is reported in the task's log once
and training goes on."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

from ..core.jobdir import JobDir
from ..core.shown import redacted

# What may be long in a spec: MLflow keeps parameter values up to 6,000 characters.
MAX_PARAM = 6000
# The spec's fields that are not the job's parameters (or could hold secrets: only the names of
# the job's tony.containers.envs variables are logged, not their values).
NOT_PARAMS = ("schema_version", "principal", "keytab")


# How long the chief waits for its MLflow run to start before its cell runs without one.
START_BUDGET_S = 20.0
# While it starts: MLflow's client's own retries, short (its defaults: 7 retries with a
# backoff factor of 2 and a 120 s timeout each, minutes in all); a user's setting wins.
QUICK_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


@contextlib.contextmanager
def _quick_retries():
    added = {k: v for k, v in QUICK_RETRIES.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def wanted(env=os.environ) -> bool:
    return bool(env.get("MLFLOW_TRACKING_URI")) and importlib.util.find_spec("mlflow") is not None


def spec_params(spec: dict) -> dict[str, str]:
    """The job's spec, flattened to MLflow parameters: ``worker.instances``, ``framework``..."""
    params: dict[str, str] = {}
    for key, value in spec.items():
        if key in NOT_PARAMS:
            continue
        if key == "tasks":
            for task in value:
                for field, v in task.items():
                    if field != "type":
                        params[f"{task['type']}.{field}"] = str(v)
        elif key == "env":
            params["env"] = ",".join(sorted(p[0] if isinstance(p, list) else p for p in value))
        elif isinstance(value, (list, tuple, dict)):
            params[key] = json.dumps(value)
        else:
            params[key] = str(value)
    return {k: v[:MAX_PARAM] for k, v in params.items()}


class Run:
    """The chief's MLflow run; ``log`` is what runtime.report calls."""

    def __init__(self, mlflow: Any, run_id: str) -> None:
        self.mlflow, self.run_id = mlflow, run_id
        self.broken = False

    @classmethod
    def start(cls, bundle_dir: Path, job_id: str, attempt: int) -> Run | None:
        """The run, started within ``START_BUDGET_S`` (said in the task's log before it waits):
        MLflow's client retries an unreachable server for minutes, and the cell waits for
        nothing but its own code. A run not started by then is given up (training goes on),
        and ended (KILLED) if it starts later, never left RUNNING. The budget is the server's:
        ``import mlflow`` (seconds of this host's CPU, more on a loaded one) comes before it."""
        try:
            import mlflow  # noqa: F401 - imported here, outside the server's budget
        except Exception as e:  # noqa: BLE001 - a broken install: training goes on
            print(f"[tony] no MLflow run: {type(e).__name__}: {redacted(str(e))}", flush=True)
            return None
        uri = redacted(os.environ.get("MLFLOW_TRACKING_URI", ""))
        print(
            f"[tony] starting the job's MLflow run at {uri} (up to {START_BUDGET_S:.0f} s)",
            flush=True,
        )
        done: list[Run | None] = []
        given_up = threading.Event()
        lock = threading.Lock()

        def start() -> None:
            run = cls._start(bundle_dir, job_id, attempt)
            with lock:
                if not given_up.is_set():
                    done.append(run)
                    return
            if run is not None:  # too late for the cell: not left RUNNING
                run.mlflow.end_run(status="KILLED")
                print(f"[tony] MLflow run {run.run_id} started late: ended (KILLED)", flush=True)

        with _quick_retries():
            t = threading.Thread(target=start, name="tony-mlflow-start", daemon=True)
            t.start()
            t.join(START_BUDGET_S)
            with lock:
                if not done:
                    given_up.set()
            run = done[0] if done else None
            if run is not None:
                run = run.resumed()
        if not done:
            print(
                f"[tony] no MLflow run: {uri} did not answer within {START_BUDGET_S:.0f} s; "
                "training goes on without it",
                flush=True,
            )
        return run

    def resumed(self) -> Run | None:
        """The run, active in this thread too (MLflow's active run is the starting thread's):
        the cell's own ``mlflow.log_*`` calls and ours go to it."""
        try:
            self.mlflow.start_run(run_id=self.run_id)
        except Exception as e:  # noqa: BLE001
            print(f"[tony] no MLflow run: {type(e).__name__}: {redacted(str(e))}", flush=True)
            return None
        return self

    @classmethod
    def _start(cls, bundle_dir: Path, job_id: str, attempt: int) -> Run | None:
        try:
            import mlflow

            spec = json.loads(JobDir(bundle_dir).spec.read_text())
            run = mlflow.start_run(
                run_name=spec.get("name") or job_id,
                tags={
                    "tony.job_id": job_id,
                    "tony.attempt": str(attempt),
                    "tony.backend": str(spec.get("backend", "")),
                    "tony.framework": str(spec.get("framework", "tensorflow")),
                },
            )
            mlflow.log_params(spec_params(spec))
            where = redacted(mlflow.get_tracking_uri())
            print(f"[tony] MLflow run {run.info.run_id} at {where}", flush=True)
            return cls(mlflow, run.info.run_id)
        except Exception as e:  # noqa: BLE001 - tracking is a convenience, training goes on
            print(f"[tony] no MLflow run: {type(e).__name__}: {redacted(str(e))}", flush=True)
            return None

    def log(self, values: dict, step: int | None) -> None:
        # ``values``: report()'s metrics, its bookkeeping (step, epoch...) already left out
        metrics = {
            k: float(v)
            for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if not metrics or self.broken:
            return
        try:  # queued, not waited for: a remote server does not slow the training loop
            at = int(step) if isinstance(step, (int, float)) else None
            self.mlflow.log_metrics(metrics, step=at, synchronous=False)
        except Exception as e:  # noqa: BLE001
            print(f"[tony] MLflow metrics not logged: {redacted(str(e))}", flush=True)
            self.broken = True

    def end(self, succeeded: bool) -> None:
        try:
            self.mlflow.end_run(status="FINISHED" if succeeded else "FAILED")
        except Exception as e:  # noqa: BLE001
            print(f"[tony] MLflow run not ended: {redacted(str(e))}", flush=True)
