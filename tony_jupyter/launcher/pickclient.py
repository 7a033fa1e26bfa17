"""The job client for a job's record: the local backend's or YARN's."""

from __future__ import annotations

from ..core.jobdir import YARN_INFO
from .client import JobClient, JobRecord


def open_client(record: JobRecord) -> JobClient:
    """A YARN job's record has ``yarn.json`` (the RM, the application); a local job's has not."""
    if record.read_json(YARN_INFO) is not None:
        from .yarn.jobclient import YarnJobClient

        return YarnJobClient(record)
    from .local import LocalJobClient

    return LocalJobClient(record)
