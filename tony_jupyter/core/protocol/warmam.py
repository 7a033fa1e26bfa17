"""The warm YARN AM's spare routes (am/yarn/warmroutes.py), before it has a job: the kernel
hands it one (``POST spare/job``), a spare executor trades its launch secret for the one it
polls with (``POST spare/hello``) and waits for its task (``GET spare/task``), and the kernel
asks how many wait (``GET spare/status``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import Record


@dataclass(frozen=True)
class WarmJob(Record):
    """The job's files (name: base64), the directory a launcher would have written."""

    files: dict[str, str]


@dataclass(frozen=True)
class WarmSecret(Record):
    """What a spare executor polls ``spare/task`` with, from now on (its own)."""

    secret: str


@dataclass(frozen=True)
class WarmTask(Record):
    """A task for a spare executor: its environment (``{{PWD}}`` for the container's working
    directory) and the job's files (name: base64)."""

    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WarmStatus(Record):
    waiting: int  # spare executors ready to be handed a task now
    handed: bool  # the kernel has handed the job
