"""A task's id, ``type:index`` (``worker:1``): made and read here, by every side."""

from __future__ import annotations


def task_id(type_: str, index: int | str) -> str:
    """The id of task ``index`` of type ``type_``."""
    return f"{type_}:{index}"


def parse_task_id(tid: str) -> tuple[str, int]:
    """``(type, index)`` of a task id; an id without an index is the type's first task."""
    type_, _, index = tid.partition(":")
    return type_, int(index or 0)
