"""The Provider contract: how the AM gets a process per task (local processes, YARN containers)."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.spec import TaskSpec

# on_exit(task_id, attempt, exit_code, diagnostics); may be called from any thread.
ExitCallback = Callable[[str, int, int, str], None]


@dataclass(frozen=True)
class Placement:
    """Where the provider put a task: facts of the provider's own, never what the task says
    (a task's host is where its endpoints may be; see am/api.py)."""

    host: str
    container: str | None = None  # YARN: the task's container id


class Provider(abc.ABC):
    on_exit: ExitCallback

    def bind(self, on_exit: ExitCallback) -> None:
        self.on_exit = on_exit

    @abc.abstractmethod
    def launch(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> None:
        """Start the executor for ``task_id`` (asynchronously is fine).

        Its end is reported through on_exit."""

    @abc.abstractmethod
    def stop_task(self, task_id: str, attempt: int) -> None:
        """Stop one task's process; its end is still reported through on_exit."""

    @abc.abstractmethod
    def placement(self, task_id: str, attempt: int) -> Placement | None:
        """Where this provider put ``task_id``'s ``attempt``; None if it did not (yet)."""

    def start(self, am_url: str) -> None:  # noqa: B027 - optional hook, not abstract
        """Called once the AM serves at ``am_url``, before the first launch (YARN registers)."""

    def set_outcome(self, state: str, reason: str) -> None:  # noqa: B027 - optional hook
        """How the job ended, told before :meth:`shutdown` (YARN unregisters with it)."""

    def record_event(self, event: dict) -> None:  # noqa: B027 - optional hook
        """Every job event as it happens (YARN keeps them on HDFS for a restarted AM)."""

    def endpoint_registered(  # noqa: B027 - optional hook
        self, name: str, url: str, path_key: str | None = None
    ) -> None:
        """A task registered endpoint ``name`` at ``url`` (YARN points its tracking URL at
        TensorBoard: at ``url + path_key + "/"``, the path its guard opens to the RM's proxy)."""

    def credentials(self) -> dict | None:
        """{"version": n, "tokens": {...}} on a secure cluster, None elsewhere."""
        return None

    def update_credentials(self, tokens: dict[str, str]) -> int:
        """Newer delegation tokens from the notebook; returns the credentials' new version."""
        raise NotImplementedError("this backend has no delegation tokens")

    def recovered_events(self) -> list[dict]:
        """The events an earlier AM attempt of this job recorded; [] on the first."""
        return []

    def exclude_hosts(self, add: list[str], remove: list[str]) -> None:  # noqa: B027 - optional
        """Keep ``add`` out of the placement of every task launched from now on and let
        ``remove`` back in (am/exclusions.py; YARN: the RM's blacklist of this application).
        Local processes run on this host alone: nothing to exclude."""

    def unallocated(self, attempt: int) -> list[str]:
        """Tasks of ``attempt`` still waiting for somewhere to run (YARN: a container)."""
        return []

    def localizing(self, attempt: int) -> dict[str, float]:
        """Tasks of ``attempt`` whose processes cannot start yet because their files are still
        being fetched and unpacked (YARN: the NodeManager localizing the container), each with
        when that began (``time.time()``)."""
        return {}

    def running_since(self, task_id: str, attempt: int) -> float | None:
        """When ``task_id``'s process was seen past its localizing; None: no such step, or
        not known."""
        return None

    def poll(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Called periodically on the AM's loop; providers that must look for exits do it here."""

    def drain(self) -> None:  # noqa: B027 - optional hook
        """Stop every task and wait (bounded) until they are gone, before the history is
        written; :meth:`shutdown` does it anyway."""

    def keep_history(self, job_dir: Path) -> None:  # noqa: B027 - optional hook
        """The job's history files are in ``job_dir`` (``am/historyrecord.py``): keep them where
        they outlive the AM (YARN: HDFS). Locally the job's directory is the history."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stop every process this provider started and wait (bounded) until they are gone."""
