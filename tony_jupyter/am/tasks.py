"""A task's record in the AM's task table: a :class:`~tony_jupyter.core.protocol.TaskView`, the one
statement of what a task is, which the Coordinator alone changes, through the methods below
(``moved`` only from ``Coordinator.move_task``). To everyone else (the rules, the views) it is
the frozen record it derives from: its fields are read-only to them (mypy says so)."""

from __future__ import annotations

from typing import Any

from ..core.protocol import Resources, TaskState, TaskView, progress_time
from ..core.shown import redacted

# A progress report stamped further ahead of the AM's clock than this does not hold off later
# ones (the newest report wins, by its stamp): hosts' clocks differ by less.
MAX_AHEAD_S = 86400.0
_set = object.__setattr__  # TaskView is frozen: a change of the table's own record is explicit


class Task(TaskView):
    __hash__ = None  # type: ignore[assignment]  # it changes: never a key
    # ``gpus``' JSON form, made once per heartbeat rather than on every snapshot (am/views.py)
    gpus_json: tuple[dict[str, Any], ...] = ()

    def moved(self, state: TaskState) -> None:
        """Its state after a move of ``TASK_MOVES`` (``Coordinator.move_task`` only)."""
        _set(self, "state", state)

    def launched(self, at: float) -> None:
        _set(self, "launched_at", at)

    def registered(self, host: str, port: int, pid: int, container: str | None, at: float) -> None:
        for name, value in (("host", host), ("port", port), ("pid", pid), ("container", container)):
            _set(self, name, value)
        _set(self, "registered_at", at)
        _set(self, "last_heartbeat", at)

    def beat(
        self,
        at: float,
        progress: dict[str, Any] | None = None,
        rss: int | None = None,
        resources: Resources | None = None,
    ) -> None:
        """A heartbeat at ``at``: its progress if not older than the task's (the sidecar's last
        beat may come after the task's own final one), its memory, CPU and GPU use: a
        heartbeat's record, parsed and bounded at the AM's edge (protocol.Beat)."""
        _set(self, "last_heartbeat", at)
        held = progress_time(self.progress or {})
        if held > at + MAX_AHEAD_S:  # stamped far ahead (a task's clock, or a task's doing)
            held = 0.0
        if progress and progress_time(progress) >= held:
            _set(self, "progress", progress)
        if rss:
            _set(self, "rss_bytes", int(rss))
        if resources is not None:
            _set(self, "cpu_percent", resources.cpu_percent)
            _set(self, "gpus", resources.gpus)
            _set(self, "gpus_json", tuple(g.to_json() for g in self.gpus))

    def failed_with(self, traceback: str) -> None:
        _set(self, "traceback", redacted(traceback))

    def exited(self, code: int, at: float, diagnostics: str) -> None:
        _set(self, "exit_code", code)
        _set(self, "finished_at", at)
        _set(self, "diagnostics", redacted(diagnostics))
