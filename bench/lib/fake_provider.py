"""A Provider that launches nothing: the AM-scale bench's simulated executors (real HTTP
clients in other processes) register for the tasks it was asked to launch."""

from __future__ import annotations

from tony_jupyter.am.provider import Placement, Provider
from tony_jupyter.spec import TaskSpec


class FakeProvider(Provider):
    def __init__(self) -> None:
        self.launched: list[tuple[str, int]] = []

    def launch(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> None:
        self.launched.append((task_id, attempt))

    def placement(self, task_id: str, attempt: int) -> Placement | None:
        return Placement("127.0.0.1")  # the simulated executors run on this machine

    def stop_task(self, task_id: str, attempt: int) -> None:
        self.on_exit(task_id, attempt, 143, "stopped by the AM (no process: bench)")

    def shutdown(self) -> None:
        pass
