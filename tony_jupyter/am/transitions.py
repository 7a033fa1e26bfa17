"""The legal moves of a task's state and of the job's: what the Coordinator's ``move_task`` and
``move_job`` allow (each refuses, and logs, a move that is not here).

A task: NEW -> LAUNCHED (its executor started) -> REGISTERED -> RUNNING (the cluster spec handed
out); it may exit at any point after its launch (SUCCEEDED, FAILED; STOPPED once the job has
ended), be declared FAILED while alive (missed heartbeats), or be asked to stop (STOPPING: an
attempt failed or the job ended; a task still NEW when a launch before it failed at once), and
a task asked to stop ends STOPPED. A task that ended moves no more: an elastic job's lost
worker is replaced by a new record, the next attempt of that task (am/elastic.py).

The job: NEW -> STARTING -> RUNNING (every task registered; an elastic job: its rendezvous
can start) and back to STARTING when an attempt fails and another is left (from STARTING too:
a task that failed before all registered), and ends SUCCEEDED, FAILED or KILLED from any of
them (killed or timed out before it started, a session stopped). LOST and UNKNOWN are the
notebook side's verdicts, never the AM's. A new AM attempt takes the job over in the state its
lost predecessor's records left it in (``Coordinator.recover``), which is not a move.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..core.protocol import JobState, TaskState

_T = TaskState
_ENDS = frozenset({_T.SUCCEEDED, _T.FAILED, _T.STOPPED, _T.STOPPING})

TASK_MOVES: Mapping[TaskState, frozenset[TaskState]] = MappingProxyType(
    {
        _T.NEW: frozenset({_T.LAUNCHED, _T.STOPPING}),
        _T.LAUNCHED: _ENDS | {_T.REGISTERED},
        _T.REGISTERED: _ENDS | {_T.RUNNING},
        _T.RUNNING: _ENDS,
        _T.STOPPING: frozenset({_T.STOPPED}),
        _T.SUCCEEDED: frozenset(),
        _T.FAILED: frozenset(),
        _T.KILLED: frozenset(),
        _T.STOPPED: frozenset(),
    }
)

_J = JobState
_OVER = frozenset({_J.SUCCEEDED, _J.FAILED, _J.KILLED})

JOB_MOVES: Mapping[JobState, frozenset[JobState]] = MappingProxyType(
    {
        _J.NEW: _OVER | {_J.STARTING},
        _J.STARTING: _OVER | {_J.STARTING, _J.RUNNING},
        _J.RUNNING: _OVER | {_J.STARTING},
        _J.SUCCEEDED: frozenset(),
        _J.FAILED: frozenset(),
        _J.KILLED: frozenset(),
        _J.LOST: frozenset(),
        _J.UNKNOWN: frozenset(),
    }
)
