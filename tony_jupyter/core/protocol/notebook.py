"""What the notebook side (the job client, the server extension's proxy) asks the AM and what
it answers: the job's events, logs, metrics, result and endpoints, the follower's feed, and
the requests that end a job or renew its credentials."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import Record
from .states import Event, JobState
from .views import JobSnapshot


@dataclass(frozen=True)
class ReasonBody(Record):
    """``POST kill``, ``POST stop``: why (shown as the job's reason)."""

    reason: str | None = None


@dataclass(frozen=True)
class StateAnswer(Record):
    state: JobState


@dataclass(frozen=True)
class EventsAnswer(Record):
    """``GET events?since=N``: the events from the N-th on, and the index of the next."""

    events: tuple[Event, ...]
    next: int


@dataclass(frozen=True)
class LogsAnswer(Record):
    """``GET logs?task=&attempt=&offset=``: a task's log text from ``offset``; ``offset`` in
    the answer is where the next read starts."""

    task: str
    attempt: int
    offset: int
    text: str


@dataclass(frozen=True)
class MetricsAnswer(Record):
    """``GET metrics``: each task's series (am/metrics.py), by attempt then task."""

    max_samples: int
    attempts: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultAnswer(Record):
    """``GET result``: the chief's outcome once it sent one (executor/result's body)."""

    state: JobState
    result: dict[str, Any] | None = None


@dataclass(frozen=True)
class EndpointRequest(Record):
    """``POST endpoints``: a named endpoint (``http://host:port/``) the job exposes, with its
    guard's secrets (TensorBoard's)."""

    name: str
    url: str
    key: str | None = None
    path_key: str | None = None


@dataclass(frozen=True)
class EndpointAnswer(Record):
    """``GET endpoints/<name>``: where the endpoint is, and its guard's key (job token only)."""

    name: str
    url: str
    key: str | None = None


@dataclass(frozen=True)
class CredentialsRequest(Record):
    """``PUT credentials``: the notebook's newer delegation tokens (name: urlString)."""

    tokens: dict[str, str]


@dataclass(frozen=True)
class CredentialsAnswer(Record):
    version: int


@dataclass(frozen=True)
class FeedLog(Record):
    text: str
    offset: int
    more: bool = False  # the read stopped at its limit: there is more to read at once


@dataclass(frozen=True)
class FeedAnswer(Record):
    """``GET feed``: what a follower needs per look (am/feed.py)."""

    version: int
    snapshot: JobSnapshot
    attempt: int
    events: tuple[Event, ...]
    next: int
    logs: dict[str, FeedLog] = field(default_factory=dict)
