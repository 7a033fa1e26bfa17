"""The AM's side of an elastic PyTorch job (``--workers MIN:MAX``).

Each worker task's executor runs the cell under PyTorch's elastic agent (executor/elastic.py),
whose c10d rendezvous is hosted by worker:0's agent. The AM launches MAX workers and hands out
the rendezvous endpoint once worker:0 and MIN workers have registered; the rendezvous itself
decides who trains. A lost worker (its process killed, its container lost, its heartbeats
stopped) does not end the attempt: the task is marked FAILED and a new attempt of that task
alone is launched, which joins the rendezvous; the agents of the others restart their worker
processes (PyTorch's re-rendezvous), and the AM does not restart their tasks. Not replaced:
worker:0 (the rendezvous lives in its agent), a task whose cell raised (an error of the code,
not a lost worker), and any lost worker once ``ELASTIC_MAX_RESTARTS`` have been replaced.
"""

from __future__ import annotations

from ..core.frameworks import ELASTIC_MAX_RESTARTS, RENDEZVOUS_TASK
from ..core.protocol import DONE_TASK_STATES, TERMINAL_JOB_STATES, TaskState
from .jobview import JobView
from .tasks import Task


def ready(c: JobView) -> bool:
    """The rendezvous endpoint can be handed out: worker:0 and MIN workers registered."""
    joined = [t for t in c.tasks.values() if t.registered_at]
    host = c.tasks.get(RENDEZVOUS_TASK)
    return bool(host and host.registered_at) and len(joined) >= c.spec.min_workers


def finished(c: JobView) -> bool:
    """worker:0's agent ended well: the workers' group completed. A worker that fails after
    (a replacement that found the rendezvous gone) does not fail the job."""
    host = c.tasks.get(RENDEZVOUS_TASK)
    return bool(c.spec.elastic and host and host.state == TaskState.SUCCEEDED)


def done(c: JobView) -> bool:
    """The job succeeded: the group completed and every worker that joined has ended (those
    that never registered are stopped, not waited for)."""
    joined = [t for t in c.tasks.values() if t.registered_at]
    return finished(c) and all(t.state in DONE_TASK_STATES for t in joined)


def replacements(c: JobView) -> int:
    return sum(t.attempt - c.attempt for t in c.tasks.values())


def replaceable(c: JobView, task: Task) -> bool:
    return (
        c.spec.elastic
        and c.state not in TERMINAL_JOB_STATES
        and c.cluster_spec is not None  # before the rendezvous starts, the attempt fails
        and task.type == "worker"
        and task.id != RENDEZVOUS_TASK
        and task.traceback is None
        and replacements(c) < ELASTIC_MAX_RESTARTS
    )


def replacement(task: Task) -> Task:
    """The next attempt of ``task`` alone (the Coordinator stops the old one, launches this)."""
    return Task(task.id, task.type, task.index, task.tracked, attempt=task.attempt + 1)


def not_joined(c: JobView, waiting: list[Task], limit_s: str) -> str:
    """Why an elastic job's rendezvous did not start: the tasks it still waits for."""
    joined = sum(1 for t in c.tasks.values() if t.registered_at)
    host = c.tasks.get(RENDEZVOUS_TASK)
    need = f"at least {c.spec.min_workers} workers"
    if host is not None and not host.registered_at:
        need += f" with {RENDEZVOUS_TASK}, which hosts the rendezvous"
    return (
        f"the elastic rendezvous needs {need}; {joined} registered within {limit_s}, "
        f"missing: {', '.join(t.id for t in waiting)}"
    )
