"""Missed-heartbeat detection from the deadline heap (am/deadlines.py), on a fake
clock: a silent task is caught within interval x missed + interval, healthy tasks never are,
and at every tick the heap finds a silent task exactly when a scan of every task would."""

import random

from tests.am.test_coordinator import make, register_all
from tony_jupyter.am import rules
from tony_jupyter.core.protocol import TaskState

TICK_S = 0.2  # the AM's (main.py TICK_MS)
CONF = "--conf tony.task.heartbeat-interval-ms=1000 --conf tony.task.max-missed-heartbeats=3"


def scan(c, now):
    """The rule as it was: every task looked at."""
    limit = rules.silence_limit(c.spec)
    return [
        t
        for t in c.tasks.values()
        if t.state in (TaskState.REGISTERED, TaskState.RUNNING)
        and t.last_heartbeat is not None
        and now - t.last_heartbeat > limit
    ]


def run(c, clock, seconds, beats, phase, until=None):
    """Ticks every 0.2 s; each task beats every second at its phase (until ``until[task]``)."""
    end = clock.t + seconds
    next_beat = {tid: clock.t + phase[tid] for tid in c.tasks}
    while clock.t < end and c.state == "RUNNING":
        clock.t = round(clock.t + TICK_S, 6)
        for tid, at in next_beat.items():
            while at <= clock.t and (until is None or at <= until.get(tid, float("inf"))):
                beats.append((tid, at))
                saved, clock.t = clock.t, at
                c.heartbeat(tid, 1, None)
                clock.t = saved
                at += 1.0
            next_beat[tid] = at
        c.tick()


def test_a_silent_task_is_caught_within_the_bound_and_healthy_ones_never(tmp_path):
    c, _, clock = make(f"--workers 200 --no-tensorboard {CONF}", tmp_path)
    register_all(c)
    rng = random.Random(7)
    phase = {tid: rng.random() for tid in c.tasks}
    beats = []
    run(c, clock, 60, beats, phase)  # a minute of 200 healthy tasks
    assert c.state == "RUNNING" and len(beats) >= 200 * 59
    run(c, clock, 30, beats, phase, until={"worker:17": clock.t + 5.3})
    assert c.state == "FAILED" and c.reason.startswith("worker:17 missed 3 heartbeats")
    last = max(at for tid, at in beats if tid == "worker:17")
    interval, missed = 1.0, 3  # caught at the tick that failed the job: clock.t
    assert missed * interval < clock.t - last <= interval * missed + interval


def test_the_heap_finds_a_silent_task_exactly_when_a_scan_would(tmp_path):
    for seed in range(20):
        c, _, clock = make(f"--workers 30 --no-tensorboard {CONF}", tmp_path / str(seed))
        rng = random.Random(seed)
        for i, tid in enumerate(c.tasks):  # registered at different times
            clock.t += rng.random() * 0.5
            c.register(tid, 1, "h", 5000 + i, i)
        for _ in range(300):
            clock.t += rng.random() * 0.4
            for tid in rng.sample(list(c.tasks), rng.randrange(0, 12)):
                c.heartbeat(tid, 1, None)
            silent = scan(c, clock.t)
            found = c.deadlines.silent(c.tasks, clock.t, rules.silence_limit(c.spec))
            assert (found is None) == (not silent), (seed, clock.t)
            assert found is None or found in silent
            if found is not None:
                found.beat(clock.t)  # as if it beat: go on looking


def test_a_replaced_attempt_is_not_looked_at_and_its_replacement_is(tmp_path):
    c, _, clock = make(f"--workers 2 --no-tensorboard {CONF}", tmp_path)
    register_all(c)
    clock.t += 0.5
    c.on_exit("worker:1", 1, 1)  # the attempt fails; no attempts left: the job ends
    assert c.state == "FAILED"
    c2, _, clock2 = make(
        f"--workers 2 --no-tensorboard {CONF} --conf tony.application.num-retries=1",
        tmp_path / "retry",
    )
    register_all(c2)
    c2.on_exit("worker:1", 1, 1)  # attempt 2 starts; attempt 1's deadlines are stale
    assert c2.attempt == 2 and c2.state == "STARTING"
    clock2.t += 10
    c2.tick()  # attempt 2 not registered yet: nothing silent (attempt 1's entries dropped)
    assert c2.state == "STARTING" and c2.attempt == 2
    register_all(c2, attempt=2)
    clock2.t += 3.5
    c2.heartbeat("worker:0", 2, None)
    c2.tick()
    assert c2.state in ("STARTING", "FAILED") and "worker:1 missed 3" in c2.reason
