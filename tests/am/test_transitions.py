"""The AM's state tables (am/transitions.py) and the Coordinator's one move of a task's state
and of the job's: a legal move moves and emits one event; any other is refused, logged, emits
nothing and leaves the state; a job walked through its life leaves an event log that replays
through the tables to the states the Coordinator holds."""

import logging

import pytest
from test_coordinator import make

from tony_jupyter.am.recovery import replay
from tony_jupyter.am.transitions import JOB_MOVES, TASK_MOVES
from tony_jupyter.core.protocol import EventKind, JobState, TaskState

ELASTIC = "--backend local --framework pytorch --workers 2:3"
LEGAL_TASK = [(a, b) for a in TaskState for b in sorted(TASK_MOVES[a])]
ILLEGAL_TASK = [(a, b) for a in TaskState for b in TaskState if b not in TASK_MOVES[a]]
LEGAL_JOB = [(a, b) for a in JobState for b in sorted(JOB_MOVES[a])]
ILLEGAL_JOB = [(a, b) for a in JobState for b in JobState if b not in JOB_MOVES[a]]


def test_the_tables_have_a_row_for_every_state_and_ended_states_move_no_more():
    assert set(TASK_MOVES) == set(TaskState) and set(JOB_MOVES) == set(JobState)
    for done in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.KILLED, TaskState.STOPPED):
        assert TASK_MOVES[done] == frozenset()
    for over in (JobState.SUCCEEDED, JobState.FAILED, JobState.KILLED, JobState.LOST):
        assert JOB_MOVES[over] == frozenset()
    assert TaskState.NEW not in set().union(*TASK_MOVES.values())  # nothing goes back to NEW


@pytest.mark.parametrize(("old", "new"), LEGAL_TASK, ids=lambda s: s.value)
def test_a_legal_task_move_moves_and_emits_one_event(tmp_path, old, new):
    c, _, _ = make("--workers 2", tmp_path)
    task = c.tasks["worker:1"]
    task.moved(old)  # the move's start, set up
    before = len(c.events)
    assert c.move_task(task, new, exit_code=3) is True
    assert task.state is new
    added = c.events[before:]
    assert len(added) == 1
    assert added[0].kind is EventKind.TASK
    assert added[0].data == {"task": "worker:1", "state": new, "attempt": 1, "exit_code": 3}


@pytest.mark.parametrize(("old", "new"), ILLEGAL_TASK, ids=lambda s: s.value)
def test_an_illegal_task_move_is_refused_logged_and_emits_nothing(tmp_path, caplog, old, new):
    c, p, _ = make("--workers 2", tmp_path)
    task = c.tasks["worker:1"]
    task.moved(old)
    before, recorded = len(c.events), len(p.recorded)
    with caplog.at_level(logging.WARNING, logger="tony_jupyter.am.coordinator"):
        assert c.move_task(task, new) is False
    assert task.state is old
    assert len(c.events) == before and len(p.recorded) == recorded
    assert f"worker:1 attempt 1: refused {old} -> {new}" in caplog.text


@pytest.mark.parametrize(("old", "new"), LEGAL_JOB, ids=lambda s: s.value)
def test_a_legal_job_move_moves_and_emits_one_event(tmp_path, old, new):
    c, _, _ = make("--workers 1", tmp_path)
    c.state = old
    before = len(c.events)
    assert c.move_job(new, "why") is True
    assert c.state is new and c.reason == "why"
    added = c.events[before:]
    assert [(e.kind, e.data) for e in added] == [(EventKind.JOB, {"state": new, "reason": "why"})]


@pytest.mark.parametrize(("old", "new"), ILLEGAL_JOB, ids=lambda s: s.value)
def test_an_illegal_job_move_is_refused_logged_and_emits_nothing(tmp_path, caplog, old, new):
    c, _, _ = make("--workers 1", tmp_path)
    c.state, c.reason = old, "as it was"
    before = len(c.events)
    with caplog.at_level(logging.WARNING, logger="tony_jupyter.am.coordinator"):
        assert c.move_job(new, "why") is False
    assert c.state is old and c.reason == "as it was" and len(c.events) == before
    assert f"job1: refused {old} -> {new} (why)" in caplog.text


def test_a_replayed_job_state_is_taken_over_only_by_a_new_job_and_emits_nothing(tmp_path, caplog):
    c, _, _ = make("--workers 1", tmp_path)  # started: STARTING
    before = len(c.events)
    with caplog.at_level(logging.WARNING, logger="tony_jupyter.am.coordinator"):
        assert c.move_job(JobState.RUNNING, "taken over", replayed=True) is False
    assert c.state is JobState.STARTING and "refused STARTING -> RUNNING" in caplog.text
    c.state = JobState.NEW
    assert c.move_job(JobState.RUNNING, "taken over", replayed=True) is True
    assert c.state is JobState.RUNNING and c.reason == "taken over"
    assert len(c.events) == before


def fold(events):
    """The events replayed through the tables: each task's (and attempt's) state, the job's;
    an AssertionError names the first event that is not a legal move."""
    tasks: dict[tuple[str, int], TaskState] = {}
    job = JobState.NEW
    for e in events:
        if e.kind is EventKind.TASK:
            key, new = (e.data["task"], e.data["attempt"]), TaskState(e.data["state"])
            old = tasks.get(key, TaskState.NEW)
            # An elastic job's lost worker: its FAILED, then the same state again with the
            # reason it was replaced (Coordinator._replace), which is a note, not a move.
            note = old is new is TaskState.FAILED and "replaced by attempt" in e.data["reason"]
            assert note or new in TASK_MOVES[old], f"event {e.seq}: {key} {old} -> {new}"
            tasks[key] = new
        elif e.kind is EventKind.JOB:
            new_job = JobState(e.data["state"])
            assert new_job in JOB_MOVES[job], f"event {e.seq}: job {job} -> {new_job}"
            job = new_job
    return tasks, job


def now_held(c):
    return {(t.id, t.attempt): t.state for t in c.tasks.values()}


def test_a_job_walked_through_two_attempts_replays_to_the_same_states(tmp_path):
    c, p, clock = make("--workers 2 --ps 1 --max-attempts 2", tmp_path)
    for i, tid in enumerate(c.tasks):
        c.register(tid, 1, "h", 10 + i, i)
    c.on_exit("worker:1", 1, 1)  # attempt 1 fails: the others are asked to stop
    tasks, job = fold(c.events)
    assert tasks[("worker:0", 1)] is tasks[("ps:0", 1)] is TaskState.STOPPING
    assert tasks[("worker:1", 1)] is TaskState.FAILED and job is JobState.STARTING
    c.on_exit("worker:0", 1, -15)
    c.on_exit("ps:0", 1, -15)  # attempt 1's exits, reported late: ignored (attempt 2 runs)
    for i, tid in enumerate(c.tasks):
        c.register(tid, 2, "h", 20 + i, i)
    clock.t += 5
    c.on_exit("worker:0", 2, 0)
    c.on_exit("worker:1", 2, 0)  # the job succeeds; its parameter server is asked to stop
    c.on_exit("ps:0", 2, -15)
    tasks, job = fold(c.events)
    assert job is c.state is JobState.SUCCEEDED
    assert {k: v for k, v in tasks.items() if k[1] == 2} == now_held(c)
    assert now_held(c)[("ps:0", 2)] is TaskState.STOPPED
    # what a new AM attempt replays from the same records is the same job
    r = replay(p.recorded, 0)
    assert r.state is c.state and r.attempt == 2 and r.failed_task == "worker:1"
    assert fold(r.events) == (tasks, job)


def test_an_elastic_job_with_a_replaced_worker_and_a_kill_replays_to_the_same_states(tmp_path):
    c, _, _ = make(ELASTIC, tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    c.on_exit("worker:2", 1, 137, "killed by signal 9")  # replaced by its attempt 2
    c.register("worker:2", 2, "h", 22, 22)
    c.kill()
    for tid in ("worker:0", "worker:1", "worker:2"):
        c.on_exit(tid, c.tasks[tid].attempt, -15)
    tasks, job = fold(c.events)
    assert job is c.state is JobState.KILLED
    assert tasks[("worker:2", 1)] is TaskState.FAILED
    assert {k: v for k, v in tasks.items() if k != ("worker:2", 1)} == now_held(c)
    assert set(now_held(c).values()) == {TaskState.STOPPED}


def test_stopping_the_tasks_emits_each_ones_stopping_event(tmp_path):
    c, p, _ = make("--workers 2", tmp_path)
    c.register("worker:0", 1, "h", 1, 1)
    before = len(c.events)
    c.kill()
    stopping = [e.data for e in c.events[before:] if e.data.get("state") == TaskState.STOPPING]
    assert [(d["task"], d["attempt"]) for d in stopping] == [("worker:0", 1), ("worker:1", 1)]
    assert p.stopped == [("worker:0", 1), ("worker:1", 1)]
    assert c.events[len(c.events) - 1].data["state"] is JobState.KILLED  # after the stops
