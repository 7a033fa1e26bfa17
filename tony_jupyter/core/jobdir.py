"""The layout of a job's directory: every file's name, spelled once.

A job's directory is ``$TONY_JUPYTER_HOME/jobs/<job id>/`` on the notebook host, the AM's
working directory (the same one for a local job; a YARN AM's container, where the launcher's
files are localized under these names), a task's bundle directory (a YARN task's container)
and, on HDFS, a history entry. :class:`JobDir` gives each file's path; the names stay as the
constants below, for what must be a string (a YARN local resource, a history entry's list).
The names are what older versions wrote: renaming one would lose their records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SPEC = "spec.json"  # the JobSpec; written last by a launcher: it makes the directory a job
ENV = "env.json"  # the values of the spec's variables (600): the AM's only, in no history
STATUS = "status.json"  # the AM's final JobSnapshot
HISTORY = "history.json"  # the history record (am/historyrecord.py), written at the job's end
EVENTS = "events.jsonl"  # the AM's event log
METRICS = "metrics.json"  # each task's progress and resource use over time
RESULT = "result.json"  # the chief's outcome: its value and pulled names
CELL = "cell.py"  # the cell's source
NAMES = "names.pkl"  # the pushed names, cloudpickled
BUNDLE = "bundle.json"  # the bundle's metadata (filename, pull, pushed, shards, src, argv)
AM_INFO = "am.json"  # where the AM serves (AmInfo): written once it does, removed at its exit
AM_PID = "am.pid"  # the local AM's process id, written by the launcher
AM_LOG = "am.log"  # the local AM's output
YARN_INFO = "yarn.json"  # a YARN job's application, staging and AM address (YarnInfo)
TOKEN = "token"  # the job's bearer token (600): a YARN record's, an older local job's
# What an AM is started with instead of the job's token: its SHA-256, enough to check the
# token, not to use it (a task can read the files its AM was started with).
TOKEN_VERIFIER = "token.sha256"
RESOURCES = "resources.json"  # YARN: the executors' local resources, for the AM
SRC_ARCHIVE = "src.tar.gz"  # YARN: the shipped directory, unpacked by each container
SRC = "src"  # local: the job's copy of the shipped directory, the tasks' working directory
CHECKPOINTS = "checkpoints"
TENSORBOARD = "tensorboard"  # the chief's TensorBoard event files
LOGS = "logs"  # logs/attempt-N/<task>.log
# YARN: the notebook's TONY_CA_BUNDLE, shipped so that the tasks verify the cluster's HTTPS
CA_BUNDLE = "ca-bundle.pem"
ORIGIN = "origin.json"  # where the job was submitted from: notebook cell and path (JobOrigin)


def task_file(task_id: str) -> str:
    """A task's id as a file name: ``worker:0`` -> ``worker-0``."""
    return task_id.replace(":", "-")


@dataclass(frozen=True)
class JobDir:
    """A job's directory: one property (or method) per file it holds."""

    path: Path

    def holds_job(self) -> bool:
        """spec.json makes a directory a job (a launcher writes it last); one the AM has
        written its status or history into is one too, its spec lost (shown as damaged)."""
        return any(p.exists() for p in (self.spec, self.status, self.history))

    @property
    def spec(self) -> Path:
        return self.path / SPEC

    @property
    def env(self) -> Path:
        return self.path / ENV

    @property
    def status(self) -> Path:
        return self.path / STATUS

    @property
    def history(self) -> Path:
        return self.path / HISTORY

    @property
    def events(self) -> Path:
        return self.path / EVENTS

    @property
    def metrics(self) -> Path:
        return self.path / METRICS

    @property
    def result(self) -> Path:
        return self.path / RESULT

    @property
    def cell(self) -> Path:
        return self.path / CELL

    @property
    def names(self) -> Path:
        return self.path / NAMES

    @property
    def bundle(self) -> Path:
        return self.path / BUNDLE

    @property
    def am_info(self) -> Path:
        return self.path / AM_INFO

    @property
    def am_pid(self) -> Path:
        return self.path / AM_PID

    @property
    def am_log(self) -> Path:
        return self.path / AM_LOG

    @property
    def yarn_info(self) -> Path:
        return self.path / YARN_INFO

    @property
    def token(self) -> Path:
        return self.path / TOKEN

    @property
    def token_verifier(self) -> Path:
        return self.path / TOKEN_VERIFIER

    @property
    def resources(self) -> Path:
        return self.path / RESOURCES

    @property
    def ca_bundle(self) -> Path:
        return self.path / CA_BUNDLE

    @property
    def src_archive(self) -> Path:
        return self.path / SRC_ARCHIVE

    @property
    def src(self) -> Path:
        return self.path / SRC

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS

    @property
    def tensorboard(self) -> Path:
        return self.path / TENSORBOARD

    @property
    def origin(self) -> Path:
        return self.path / ORIGIN

    @property
    def logs(self) -> Path:
        return self.path / LOGS

    def attempt_logs(self, attempt: int) -> Path:
        """``logs/attempt-N``: every task's log of that attempt."""
        return self.logs / f"attempt-{attempt}"

    def log(self, attempt: int, task_id: str) -> Path:
        """``logs/attempt-N/<task>.log``: what the task's executor sent of its output."""
        return self.attempt_logs(attempt) / (task_file(task_id) + ".log")

    def stdout(self, attempt: int, task_id: str) -> Path:
        """``logs/attempt-N/<task>.stdout``: a local task process's own output."""
        return self.attempt_logs(attempt) / (task_file(task_id) + ".stdout")
