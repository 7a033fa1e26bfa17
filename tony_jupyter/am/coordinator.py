"""The AM's Coordinator: task table, rendezvous, heartbeats and failure detection, attempts,
event log. Runs on one event loop (the AM's); providers report exits through ``on_exit``."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from pathlib import Path

from ..core.jobdir import JobDir
from ..core.protocol import (
    DONE_TASK_STATES,
    TERMINAL_JOB_STATES,
    CellOutcome,
    Event,
    EventKind,
    ExecutorEnv,
    FailedAttempt,
    JobSnapshot,
    JobState,
    Resources,
    Stall,
    TaskState,
    task_id,
)
from ..core.shown import redacted
from ..core.spec import JobSpec
from . import elastic, recovery, rules, views
from .deadlines import Deadlines
from .events import EventLog
from .exclusions import Exclusions
from .metrics import MetricLog
from .provider import Provider
from .recovery import ENDPOINT_SECRETS
from .stacks import StackRequests
from .stalls import StallWatch
from .task_credentials import TaskCredentials
from .tasks import Task
from .transitions import JOB_MOVES, TASK_MOVES

log = logging.getLogger(__name__)

# A task's events that cannot end a cluster-spec long-poll (see Coordinator.subscribe); a task
# is asked to stop only just before the attempt's or the job's own event, which does.
_NOT_TURNS = {TaskState.LAUNCHED, TaskState.REGISTERED, TaskState.RUNNING, TaskState.STOPPING}


# A stall's kill or restart waits this long at most for the stacks it attaches.
STALL_STACKS_WAIT_S = 10.0


class StaleAttempt(Exception):
    """A request from a task of an attempt that has ended: the executor should exit."""


class Coordinator:
    def __init__(
        self,
        job_id: str,
        spec: JobSpec,
        job_dir: Path,
        provider: Provider,
        base_env: dict[str, str],
        clock=time.time,
    ):
        self.job_id, self.spec, self.job_dir, self.provider = job_id, spec, job_dir, provider
        self.base_env = base_env
        self.credentials = TaskCredentials()  # each launch's registration secret, task tokens
        self.clock = clock
        self.state = JobState.NEW
        self.reason = ""
        self.failed_task: str | None = None
        self.attempt = 0
        self.tasks: dict[str, Task] = {}
        self.attempt_history: list[FailedAttempt] = []
        self.events = EventLog(JobDir(job_dir).events)  # the last ones in memory (events.py)
        self.endpoints: dict[str, str] = {}
        # An endpoint's credentials (TensorBoard's "key" and "path_key"): never in a snapshot or
        # in the events served or kept beside the job; only in YARN's recovery log (below).
        self.endpoint_keys: dict[str, dict[str, str]] = {}
        self.endpoint_owners: dict[str, str | None] = {}  # the task that registered it (None: job)
        self.result: dict | None = None
        self.started_at = clock()
        self.finished_at: float | None = None
        self.history_kept = False  # ended jobs are reported so only once this is (main.py)
        self.cluster_spec: dict[str, list[str]] | None = None
        self.attempt_started = 0.0
        self.chief_done_at: float | None = None
        self._listeners: list = []  # callables notified on every change (the AM's long-polls)
        self._turn_listeners: list = []  # ... on a change of the job's course (subscribe)
        self.metrics = MetricLog()  # each task's progress and resource use over time
        self.deadlines = Deadlines()  # when each task's heartbeats are due
        self.exclusions = Exclusions(spec.exclusion_wait_s)  # hosts of lost tasks (exclusions.py)
        self.stacks = StackRequests()  # every task's stacks, on request (stacks.py)
        self.stalls = StallWatch(spec.stall_factor, spec.stall_floor_s, spec.stall_ceiling_s)
        self.stall: Stall | None = None  # the job is stalled (stalls.py; the snapshot's)
        self.stall_request = 0  # the stack request made as it was marked
        JobDir(job_dir).logs.mkdir(parents=True, exist_ok=True)

    # --- events ---------------------------------------------------------------------------

    def emit(self, kind: EventKind, private: dict | None = None, **data) -> None:
        """Record an event; ``private`` fields go to the provider's recovery log only (on YARN
        in the job's staging directory, mode 700, beside the job token)."""
        event = Event(len(self.events), self.clock(), kind, data)
        self.events.append(event)
        record = event.to_json()
        self.provider.record_event({**record, **private} if private else record)
        self.changed()
        if kind is not EventKind.TASK or data.get("state") not in _NOT_TURNS:
            for notify in list(self._turn_listeners):
                notify()

    def subscribe(self, notify, turns_only: bool = False) -> None:
        """Call ``notify()`` on every change (the AM's long-polls wait on it); ``turns_only``:
        on every event but a task's launch, registration and start, which is every change
        that can end a cluster-spec long-poll (the spec handed out: the job turns RUNNING; an
        attempt over: the job's or an attempt's event, or a task's end). At 10,000 tasks
        waking every waiter on each registration and heartbeat was O(tasks²) wake-ups."""
        (self._turn_listeners if turns_only else self._listeners).append(notify)

    def changed(self) -> None:
        for notify in list(self._listeners):
            notify()

    def move_task(self, task: Task, state: TaskState, **extra) -> bool:
        """The one place a task's state changes: a move of :data:`TASK_MOVES` and its one event
        (``extra``: the event's other fields). Any other move is refused and logged."""
        if state not in TASK_MOVES[task.state]:
            log.warning("%s attempt %d: refused %s -> %s", task.id, task.attempt, task.state, state)
            return False
        task.moved(state)
        self.emit(EventKind.TASK, task=task.id, state=state, attempt=task.attempt, **extra)
        return True

    def move_job(self, state: JobState, reason: str = "", replayed: bool = False) -> bool:
        """The one place the job's state changes: a move of :data:`JOB_MOVES` and its event.
        ``replayed``: the state a lost AM's records left (``recover``), taken over by a new
        job (NEW) without an event: the lost AM's is in the log already."""
        if not (self.state is JobState.NEW if replayed else state in JOB_MOVES[self.state]):
            log.warning("%s: refused %s -> %s (%s)", self.job_id, self.state, state, reason)
            return False
        self.state, self.reason = state, reason or self.reason
        if not replayed:
            self.emit(EventKind.JOB, state=state, reason=reason)
        return True

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self.state in TERMINAL_JOB_STATES:  # recovered: the job had ended before the AM was lost
            self.finished_at = self.clock()
            self.write_status()
            return
        if self.attempt:  # recovered: the attempt that ran under the lost AM is over
            why = "the AM was lost (YARN started a new AM attempt); its tasks went with it"
            self._attempt_failed(why, None)
            self.move_job(JobState.STARTING, f"attempt {self.attempt} failed: {why}")
        else:
            self.move_job(JobState.STARTING)
        self._start_attempt()

    def recover(self, records: list[dict]) -> None:
        """Take over a job from the records of an earlier AM attempt (am/recovery.py)."""
        r = recovery.replay(records, len(self.events))
        recovery.write_logs(r.logs, self.log_path)
        for event in r.events:
            self.events.append(event, flush=False)
        self.events.flush()
        self.attempt = max(self.attempt, r.attempt)
        self.attempt_history += r.attempt_history
        self.failed_task = r.failed_task or self.failed_task
        self.endpoints.update(r.endpoints)
        self.endpoint_keys.update(r.endpoint_keys)
        self.endpoint_owners.update(r.endpoint_owners)
        if r.state is not None:
            self.move_job(r.state, r.reason, replayed=True)
        if self.events:
            self.started_at = self.events[0].time

    def _start_attempt(self) -> None:
        self.attempt += 1
        self.attempt_started = self.clock()
        self.chief_done_at = None
        self.cluster_spec = None
        self.stalls.reset()
        self.stall = None
        self.tasks = {}
        for t in self.spec.tasks:
            for i in range(t.instances):
                tid = task_id(t.type, i)
                tracked = self.spec.is_tracked(t.type)
                self.tasks[tid] = Task(tid, t.type, i, tracked, attempt=self.attempt)
        self.emit(EventKind.ATTEMPT, attempt=self.attempt, state="STARTED")
        for task in list(self.tasks.values()):
            self.launch(task)

    def launch(self, task: Task) -> None:
        """Start ``task``'s executor for its attempt (every task of a job attempt; one lost
        worker's replacement in an elastic job)."""
        JobDir(self.job_dir).attempt_logs(task.attempt).mkdir(parents=True, exist_ok=True)
        env = dict(self.base_env)
        env[ExecutorEnv.var("task_id")] = task.id
        env[ExecutorEnv.var("attempt")] = str(task.attempt)
        env[ExecutorEnv.var("token")] = self.credentials.issue(task.id, task.attempt)
        task.launched(self.clock())
        self.move_task(task, TaskState.LAUNCHED)
        self.provider.launch(self.spec.task(task.type), task.id, task.attempt, env)

    def live_task(self, task_id: str, attempt: int) -> Task:
        """The task, if this request's attempt is the live one; else :class:`StaleAttempt`."""
        if (
            self.state in TERMINAL_JOB_STATES
            or task_id not in self.tasks
            or attempt != self.tasks[task_id].attempt
        ):
            raise StaleAttempt(f"{task_id} attempt {attempt} is over")
        return self.tasks[task_id]

    # --- executor calls ---------------------------------------------------------------------

    def add_endpoint(self, name: str, url: str, keys: dict, owner: str | None = None) -> None:
        """Task ``owner``'s endpoint (None: the job's) at ``url``; ``keys`` (its "key" and
        "path_key") are kept out of the snapshot and the events the AM serves."""
        self.endpoints[name], self.endpoint_owners[name] = url, owner
        private = self.endpoint_keys[name] = {k: keys[k] for k in ENDPOINT_SECRETS if k in keys}
        self.emit(EventKind.ENDPOINT, private=private, name=name, url=url, task=owner)
        self.provider.endpoint_registered(name, url, private.get("path_key"))

    def register(
        self, task_id: str, attempt: int, host: str, port: int, pid: int, container=None
    ) -> None:
        task = self.live_task(task_id, attempt)
        task.registered(host, port, pid, container, self.clock())
        self.deadlines.watch(task, rules.silence_limit(self.spec))
        self.move_task(task, TaskState.REGISTERED, host=f"{host}:{port}")
        if self.cluster_spec is not None:  # elastic: a late or replacement worker joins
            self.move_task(task, TaskState.RUNNING)
        elif (
            elastic.ready(self)
            if self.spec.elastic
            else all(t.registered_at for t in self.tasks.values())
        ):
            self.cluster_spec = views.cluster_spec(self.tasks.values())
            for t in self.tasks.values():
                if t.state == TaskState.REGISTERED:
                    self.move_task(t, TaskState.RUNNING)
            self.move_job(JobState.RUNNING)

    def heartbeat(
        self,
        task_id: str,
        attempt: int,
        progress: dict | None,
        rss: int | None = None,
        resources: Resources | None = None,
    ) -> None:
        task = self.live_task(task_id, attempt)
        now = self.clock()
        task.beat(now, progress, rss, resources)
        self.metrics.add(attempt, task_id, now, task.progress, resources)
        if self.stalls.observe(task_id, task.progress, now) and self.stall is not None:
            if self.state not in TERMINAL_JOB_STATES:  # its steps go on: no longer stalled
                self.stall = None
                self.emit(EventKind.STALL, stalled=False, task=task_id)
        self.changed()

    def log_path(self, task_id: str, attempt: int | None = None) -> Path:
        task = self.tasks.get(task_id)
        attempt = attempt or (task.attempt if task else self.attempt)
        return JobDir(self.job_dir).log(attempt, task_id)

    def add_logs(self, task_id: str, attempt: int, text: str) -> None:
        if task_id not in self.tasks or attempt > self.tasks[task_id].attempt:
            raise StaleAttempt(f"{task_id} attempt {attempt} is over")
        text = redacted(text)  # a URL's password (an MLflow library's error) never kept
        with open(self.log_path(task_id, attempt), "a", encoding="utf-8") as f:
            f.write(text)
        # Kept beside the events (on HDFS on YARN), so that a new AM attempt can restore them.
        self.provider.record_event(
            {"kind": EventKind.LOG.value, "task": task_id, "attempt": attempt, "text": text}
        )
        self.changed()

    def set_result(self, task_id: str, attempt: int, payload: dict) -> None:
        task = self.live_task(task_id, attempt)
        outcome = CellOutcome.from_json(payload)
        if outcome.traceback:
            task.failed_with(outcome.traceback)
        # Elastic: only rank 0's outcome has a value, wherever it ran (not always worker:0).
        keep = outcome.value is not None if self.spec.elastic else task_id == self.spec.chief_id
        if keep and outcome.ok:
            self.result = payload
            JobDir(self.job_dir).result.write_text(json.dumps(payload))
        self.changed()

    # --- provider callbacks and timers ------------------------------------------------------

    def on_exit(self, task_id: str, attempt: int, code: int, diagnostics: str = "") -> None:
        if task_id not in self.tasks or attempt != self.tasks[task_id].attempt:
            return  # an ended attempt's (the job's, or a replaced worker's)
        task = self.tasks[task_id]
        if task.state in DONE_TASK_STATES:
            return
        task.exited(code, self.clock(), diagnostics)
        if self.state in TERMINAL_JOB_STATES or task.state == TaskState.STOPPING:
            self.move_task(task, TaskState.STOPPED, exit_code=code)
            return
        if code == 0:
            self.move_task(task, TaskState.SUCCEEDED, exit_code=0)
            if task.id == self.spec.chief_id:
                self.chief_done_at = self.clock()
            self._check_done()
            return
        self.move_task(task, TaskState.FAILED, exit_code=code)
        self._apply(rules.exit_verdict(task, code, diagnostics))

    def _check_done(self) -> None:
        tracked = [t for t in self.tasks.values() if t.tracked]
        if self.spec.elastic:
            if elastic.done(self):
                self._finish(JobState.SUCCEEDED, "the elastic workers finished")
        elif all(t.state == TaskState.SUCCEEDED for t in tracked):
            self._finish(JobState.SUCCEEDED, "all tracked tasks succeeded")

    def tick(self) -> None:
        """Periodic checks: the timer rules of :mod:`.rules`, the first verdict applied."""
        if self.state in TERMINAL_JOB_STATES:
            return
        self.provider.poll()
        if self.state in TERMINAL_JOB_STATES:
            return
        now = self.clock()
        self._lift_exclusions(now)
        for rule in rules.TIMER_RULES:
            verdict = rule(self, now)
            if verdict is not None:
                self._apply(verdict)
                return
        self._watch_stall(now)

    def _watch_stall(self, now: float) -> None:
        """Mark the job stalled (stalls.py): an event, the snapshot's ``stall``, every live
        task's stacks asked for and attached; then ``tony.stall.action``'s kill or restart,
        once the stacks are in (or :data:`STALL_STACKS_WAIT_S` has passed)."""
        if self.state is not JobState.RUNNING or self.spec.session:
            return
        if self.stall is None:
            if not self.stalls.due(now):
                return
            live = {
                t.id: (t.last_heartbeat, t.progress)
                for t in self.tasks.values()
                if t.state in (TaskState.REGISTERED, TaskState.RUNNING)
            }
            beat_s = self.spec.heartbeat_interval_ms / 1000.0
            found = self.stalls.check(now, live, beat_s)
            if found is None:
                return
            self.stall = Stall(
                found.since,
                now,
                found.threshold_s,
                found.behind,
                found.steps,
                self.spec.stall_action,
            )
            self.stall_request = self.stacks.ask(live)
            log.warning(
                "stalled: no new step for %.1f s (limit %.1f s)",
                now - found.since,
                found.threshold_s,
            )
            self.emit(
                EventKind.STALL,
                stalled=True,
                since=found.since,
                threshold_s=found.threshold_s,
                behind=list(found.behind),
                action=self.spec.stall_action,
            )
            return
        if not self.stall.stacks and self.stacks.request == self.stall_request:
            if self.stacks.complete or now - self.stall.marked > STALL_STACKS_WAIT_S:
                got = self.stacks.answer(self.stall_request).tasks
                self.stall = replace(self.stall, stacks=got)
                self.changed()
        waited = self.stall.stacks or now - self.stall.marked > STALL_STACKS_WAIT_S
        if self.stall.action == "warn" or not waited:
            return
        why = (
            f"stalled: no task reported a new step for {now - self.stall.since:.0f} s "
            f"(limit {self.stall.threshold_s:g} s; tony.stall.action={self.stall.action})"
        )
        if self.stall.action == "kill":
            self.kill(why)
        else:  # restart: the attempt fails, blamed on the task furthest behind (if one is)
            blamed = self.tasks.get(self.stall.behind[0] if self.stall.behind else "") or next(
                t for t in self.tasks.values() if t.tracked
            )
            self._fail_attempt(blamed, why)

    def _apply(self, verdict: rules.Verdict) -> None:
        task, why = verdict.task, verdict.reason
        if task is None:
            self._finish(JobState.FAILED, why)
            return
        if verdict.task_failed:
            self.move_task(task, TaskState.FAILED, reason="missed heartbeats")
            why = self._exclude_host(task, why)
        if elastic.finished(self):  # a straggler of a completed elastic job
            self._check_done()
            return
        if elastic.replaceable(self, task):
            self._replace(task, why)
            return
        self._fail_attempt(task, why)

    def _exclude_host(self, task: Task, why: str) -> str:
        """The host of a task lost by missed heartbeats sits out the next launches (its tasks
        may be cut off there, alive: exclusions.py); the reason given says so."""
        where = self.provider.placement(task.id, task.attempt)
        if where is None or not self.exclusions.on:
            return why
        if self.exclusions.exclude(where.host, self.clock()):
            self.provider.exclude_hosts([where.host], [])
        return f"{why}; its host {where.host} is excluded from the next placements"

    def _lift_exclusions(self, now: float) -> None:
        if not self.exclusions.since:
            return
        waiting = self.provider.unallocated(self.attempt)
        due = self.exclusions.due(now, self.attempt_started if waiting else None)
        if due:
            self.exclusions.lift(due)
            self.provider.exclude_hosts([], due)
            log.info("%s: hosts let back in: %s", self.job_id, ", ".join(due))

    def _replace(self, task: Task, why: str) -> None:
        """Elastic: launch the next attempt of ``task`` alone; the other tasks go on."""
        if task.exit_code is None:  # alive but silent (stopped, hung): its process must go
            self.provider.stop_task(task.id, task.attempt)
        fresh = elastic.replacement(task)
        why += f"; replaced by attempt {fresh.attempt} (elastic job)"
        self.emit(
            EventKind.TASK, task=task.id, state=TaskState.FAILED, attempt=task.attempt, reason=why
        )
        self.tasks[task.id] = fresh
        self.launch(fresh)

    def _fail_attempt(self, task: Task, why: str) -> None:
        self.failed_task = task.id
        self._attempt_failed(why, task.id)
        if self.attempt < self.spec.max_attempts:
            self._stop_tasks()
            self.move_job(JobState.STARTING, f"attempt {self.attempt} failed: {why}")
            self._start_attempt()
        else:
            self._finish(JobState.FAILED, why)

    def _attempt_failed(self, why: str, task: str | None) -> None:
        self.attempt_history.append(FailedAttempt(self.attempt, why, task))
        self.emit(EventKind.ATTEMPT, attempt=self.attempt, state="FAILED", reason=why, task=task)

    def _stop_tasks(self) -> None:
        for t in self.tasks.values():
            if t.state not in DONE_TASK_STATES:
                if t.state is not TaskState.STOPPING:
                    self.move_task(t, TaskState.STOPPING)
                self.provider.stop_task(t.id, t.attempt)

    def kill(self, reason: str = "killed on request") -> None:
        if self.state not in TERMINAL_JOB_STATES:
            self._finish(JobState.KILLED, reason)

    def stop(self, reason: str) -> None:
        """End a session normally (its tasks never end by themselves)."""
        if self.state not in TERMINAL_JOB_STATES:
            self._finish(JobState.SUCCEEDED, reason)

    def _finish(self, state: JobState, reason: str) -> None:
        self._stop_tasks()
        self.finished_at = self.clock()
        self.move_job(state, reason)
        self.write_status()

    def write_status(self) -> None:
        views.write_status(self, JobDir(self.job_dir).status)

    # --- views ------------------------------------------------------------------------------

    def snapshot(self) -> JobSnapshot:
        return views.snapshot(self)

    def snapshot_json(self) -> dict:
        """``snapshot().to_json()``, built straight from the task records (views.py)."""
        return views.snapshot_json(self)

    def close(self) -> None:
        self.events.close()
