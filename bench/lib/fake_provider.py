"""A Provider that launches nothing: the AM-scale bench's simulated executors (real HTTP
clients in other processes) register for the tasks it was asked to launch, each with the
one-time registration secret of its launch, which this provider writes to ``launches.jsonl``
in the job's directory (where a real provider puts it in the task's environment)."""

from __future__ import annotations

import json
from pathlib import Path

from tony_jupyter.am.provider import Placement, Provider
from tony_jupyter.core.protocol import ExecutorEnv
from tony_jupyter.core.spec import TaskSpec

LAUNCHES = "launches.jsonl"


class FakeProvider(Provider):
    def __init__(self, job_dir: Path | None = None) -> None:
        self.launched: list[tuple[str, int]] = []
        self._out = open(job_dir / LAUNCHES, "a") if job_dir else None  # noqa: SIM115 - ours

    def launch(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> None:
        self.launched.append((task_id, attempt))
        if self._out is not None:
            secret = env[ExecutorEnv.var("token")]
            self._out.write(json.dumps({"task": task_id, "attempt": attempt, "secret": secret}))
            self._out.write("\n")
            self._out.flush()

    def placement(self, task_id: str, attempt: int) -> Placement | None:
        return Placement("127.0.0.1")  # the simulated executors run on this machine

    def stop_task(self, task_id: str, attempt: int) -> None:
        self.on_exit(task_id, attempt, 143, "stopped by the AM (no process: bench)")

    def shutdown(self) -> None:
        pass
