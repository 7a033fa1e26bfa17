"""What an executor process is started with: :class:`ExecutorEnv`, the one definition of the
``TONY_*`` variables, and TensorBoard's guard's (:class:`GuardConfig`)."""

from __future__ import annotations

import hashlib
import secrets
import typing
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..records import Record
from ..settings import HEARTBEAT_INTERVAL_MS, MAX_MISSED_HEARTBEATS


def new_token() -> str:
    """A job's token, the secret its owner's clients show its AM: minted here only."""
    return secrets.token_urlsafe(32)


def token_verifier(token: str | bytes) -> str:
    """What an AM is given instead of the job's token (jobdir.TOKEN_VERIFIER): its SHA-256,
    computed here only."""
    return hashlib.sha256(token.encode() if isinstance(token, str) else token).hexdigest()


@dataclass(frozen=True)
class ExecutorEnv(Record):
    """The environment the AM starts every executor with: the one definition of ``TONY_*``."""

    PREFIX: ClassVar[str] = "TONY_"
    am_url: str  # the AM's API: where the executor registers, heartbeats and reports
    token: str = ""  # a one-time registration secret, traded for the task's token (register)
    job_id: str = ""  # the job's id
    chief: str = ""  # the task whose last expression is the cell's value (JobSpec.chief_id)
    heartbeat_ms: int = HEARTBEAT_INTERVAL_MS  # tony.task.heartbeat-interval-ms
    max_missed: int = MAX_MISSED_HEARTBEATS  # tony.task.max-missed-heartbeats
    am_lost_s: float = 0.0  # the sidecar ends its task after this long unanswered (0: 2x above)
    checkpoint_dir: str = ""  # what tony_jupyter.checkpoint_dir() returns
    tensorboard_dir: str = ""  # what tony_jupyter.tensorboard_dir() returns
    tensorboard: bool = True  # the chief starts TensorBoard (off: --no-tensorboard)
    session: bool = False  # a %tony session: the executor runs cell after cell
    framework: str = "tensorflow"  # with these two: the env of executor/frameworkenv.py
    procs_per_task: int = 1  # --procs-per-task
    min_workers: int = 0  # PyTorch: an elastic job (--workers MIN:MAX) when above 0
    max_workers: int = 0  # an elastic job's MAX
    max_attempts: int = 1  # --max-attempts
    secure: bool = False  # Kerberos: TensorBoard lets the RM's proxy in for the job's owner only
    # Set per task by the provider:
    task_id: str = ""  # this task's id, e.g. worker:1
    attempt: int = 0  # the job's attempt this task belongs to
    bundle_dir: str = "."  # the job's staged files: the cell, its names, the shipped dir
    container_id: str | None = None  # YARN: the task's container
    executor_host: str | None = None  # the host the task registers (the provider's)
    staging_dir: str | None = None  # YARN: the job's HDFS staging directory
    webhdfs_url: str | None = None  # YARN: WebHDFS, for checkpoints and TensorBoard logs
    checkpoint_remote: str | None = None  # YARN: where checkpoint_dir() is mirrored on HDFS
    python: str | None = None  # YARN: the AM's, the interpreter its executors run
    credentials_file: str | None = None  # secure YARN: the job's tokens (tokens.tokens_env)
    credentials_version: str | None = None  # secure YARN: which tokens the file holds
    hdfs_token: str | None = None  # secure YARN: the HDFS delegation token at start

    @property
    def am_lost_limit(self) -> float:
        """Seconds without an answer from the AM after which a task's sidecar ends the task
        (``tony.task.am-lost-sec``; by default twice the AM's missed-heartbeat limit, so that
        the AM declares the task lost first)."""
        return self.am_lost_s or self.heartbeat_ms / 1000.0 * self.max_missed * 2

    @staticmethod
    def var(name: str) -> str:
        """The variable a field travels in: ``task_id`` -> ``TONY_TASK_ID``."""
        return ExecutorEnv.PREFIX + name.upper()

    def to_env(self) -> dict[str, str]:
        env = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                env[self.var(f.name)] = str(int(value)) if isinstance(value, bool) else str(value)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ExecutorEnv:
        hints = typing.get_type_hints(cls)
        kw: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(cls.var(f.name))
            if raw is None:
                continue
            hint = hints[f.name]
            if hint is bool:
                kw[f.name] = raw == "1"
            elif hint is int:
                kw[f.name] = int(raw)
            elif hint is float:
                kw[f.name] = float(raw)
            else:
                kw[f.name] = raw
        return cls(**kw)


# TensorBoard's guard (executor/tensorboard_guard.py): its secrets, handed to its process in
# these variables by whoever starts it (the chief's executor; the Jupyter server for a
# finished job's TensorBoard).
_VARS = {
    "key": "TONY_TB_GUARD_KEY",
    "path_key": "TONY_TB_GUARD_PATH_KEY",
    "owner": "TONY_TB_GUARD_OWNER",
    "secure": "TONY_TB_GUARD_SECURE",
}


@dataclass(frozen=True)
class GuardConfig:
    key: str  # the bearer credential
    path_key: str  # the path segment the RM's proxy comes in under
    owner: str  # the job's user: the proxy-user a secure cluster's proxy must name
    secure: bool = False  # Kerberos: the RM's proxy authenticates its users

    def to_env(self) -> dict[str, str]:
        """How the chief's executor hands these to the TensorBoard process."""
        values = {**self.__dict__, "secure": "1" if self.secure else "0"}
        return {var: str(values[name]) for name, var in _VARS.items()}

    @classmethod
    def from_env(cls, env: MutableMapping[str, str]) -> GuardConfig | None:
        """Read and remove them from ``env`` (``os.environ``); None if the key is missing."""
        got = {name: env.pop(var, "") for name, var in _VARS.items()}
        if not got["key"] or not got["path_key"]:
            return None
        return cls(got["key"], got["path_key"], got["owner"], got["secure"] == "1")
