"""Stall detection (am/stalls.py and the Coordinator's use of it): the threshold rule, who is
furthest behind, what marks a job stalled and what does not, and tony.stall.action."""

import pytest

from tests.am.test_coordinator import make, register_all
from tony_jupyter.am.coordinator import STALL_STACKS_WAIT_S
from tony_jupyter.am.stalls import StallWatch, position, threshold, words
from tony_jupyter.core.errors import SpecError
from tony_jupyter.core.protocol import JobSnapshot, StacksReport
from tony_jupyter.options import parse_job_args

STALL = "--conf tony.stall.factor=5 --conf tony.stall.floor-sec=10 --conf tony.stall.ceiling-sec=60"


def test_the_threshold_is_k_times_the_median_interval_within_floor_and_ceiling():
    assert threshold([1.0, 2.0, 100.0], factor=5, floor=3, ceiling=60) == 10.0  # median 2
    assert threshold([0.1, 0.1], factor=5, floor=3, ceiling=60) == 3  # the floor
    assert threshold([30.0], factor=5, floor=3, ceiling=60) == 60  # the ceiling
    assert threshold([], factor=5, floor=3, ceiling=60) == 60  # no interval known yet


def test_a_steps_position_orders_epochs_before_steps_and_says_itself():
    assert position({"loss": 0.5}) is None and position(None) is None
    assert position({"epoch": 2, "step": 1}) > position({"epoch": 1, "step": 90})
    assert words({"epoch": 2, "step": 15, "loss": 1}) == "epoch 2 step 15"
    assert words({}) == "no step yet"


def test_the_watch_pools_each_tasks_intervals_and_finds_who_is_behind():
    w = StallWatch(factor=5, floor=1, ceiling=100)
    for i in range(4):  # worker:0 steps every 2 s, worker:1 every 2 s but one step short
        assert w.observe("worker:0", {"step": i}, 100 + 2 * i)
        assert not w.observe("worker:0", {"step": i}, 100.5 + 2 * i)  # the same step again
        if i < 3:
            w.observe("worker:1", {"step": i}, 100.1 + 2 * i)
    assert w.limit == 10.0  # 5 x the median 2 s
    live = {"worker:0": (120.0, {"step": 3}), "worker:1": (120.0, {"step": 2})}
    assert w.check(115.9, live, beat_s=1) is None  # 9.9 s since the last step
    found = w.check(
        116.1 + 0.1, dict(live, **{"worker:0": (116.0, {}), "worker:1": (116.0, {})}), 1
    )
    assert found is not None and found.since == 106 and found.behind == ("worker:1",)
    # a task whose heartbeats are late is lost, not stalled: the missed-heartbeat rule's
    assert w.check(116.2, {"worker:0": (116.0, {}), "worker:1": (112.0, {})}, 1) is None
    # all at one step: nobody is behind (the stacks tell)
    w.observe("worker:1", {"step": 3}, 106.5)
    assert w.behind({"worker:0": 0, "worker:1": 0}) == ()


def test_a_job_that_reports_no_step_is_never_stalled(tmp_path):
    c, _, clock = make("--workers 2 " + STALL, tmp_path)
    register_all(c)
    for _ in range(100):
        clock.t += 1
        for t in c.tasks:
            c.heartbeat(t, 1, {"loss": 1.0})
        c.tick()
    assert c.stall is None and c.state == "RUNNING"


def run_steps(c, clock, steps: int, every: float = 1.0) -> None:
    for i in range(steps):
        clock.t += every
        for t in c.tasks:
            c.heartbeat(t, 1, {"step": i})
        c.tick()


def beat_without_steps(c, clock, seconds: int) -> None:
    for _ in range(seconds):
        clock.t += 1
        for t in c.tasks:
            c.heartbeat(t, 1, None)
        c.tick()


def test_a_job_without_new_steps_is_marked_stalled_its_stacks_attached_then_cleared(tmp_path):
    c, _, clock = make("--workers 2 " + STALL, tmp_path)
    register_all(c)
    run_steps(c, clock, 5)  # one step a second: limit max(5 x 1, 10) = 10 s
    last_step = clock.t
    beat_without_steps(c, clock, 10)
    assert c.stall is None
    beat_without_steps(c, clock, 1)
    stall = c.stall
    assert stall is not None and stall.since == last_step and stall.threshold_s == 10
    assert stall.marked == last_step + 11 and stall.action == "warn"
    assert stall.steps == {"worker:0": "step 4", "worker:1": "step 4"} and stall.behind == ()
    event = c.events[-1]
    assert event.kind == "stall" and event.data["stalled"] is True
    # the stacks: asked of every live task through their heartbeats' answers
    assert c.stacks.for_task("worker:1") == c.stall_request
    for t in c.tasks:
        c.stacks.add(StacksReport(task=t, attempt=1, request=c.stall_request, text=f"{t}"), "h")
    c.tick()
    assert [s.text for s in c.stall.stacks] == ["worker:0", "worker:1"]
    snap = JobSnapshot.from_json(c.snapshot_json())
    assert snap.stall == c.stall and c.state == "RUNNING"  # warn: the job goes on
    clock.t += 1
    c.heartbeat("worker:1", 1, {"step": 5})  # a new step: no longer stalled
    assert c.stall is None and c.events[-1].data == {"stalled": False, "task": "worker:1"}


def test_kill_waits_for_the_stacks_then_kills(tmp_path):
    c, _, clock = make("--workers 2 --conf tony.stall.action=kill " + STALL, tmp_path)
    register_all(c)
    run_steps(c, clock, 5)
    beat_without_steps(c, clock, 11)
    assert c.stall is not None and c.state == "RUNNING"  # waiting for the stacks
    beat_without_steps(c, clock, int(STALL_STACKS_WAIT_S) + 1)  # none came: it acts anyway
    assert c.state == "KILLED" and "stalled: no task reported a new step" in c.reason
    assert "tony.stall.action=kill" in c.reason and c.stall is not None  # kept in the status


def test_restart_fails_the_attempt_blaming_the_task_behind(tmp_path):
    c, _, clock = make(
        "--workers 2 --max-attempts 2 --conf tony.stall.action=restart " + STALL, tmp_path
    )
    register_all(c)
    for i in range(5):
        clock.t += 1
        c.heartbeat("worker:0", 1, {"step": i})
        c.heartbeat("worker:1", 1, {"step": min(i, 2)})  # worker:1 stuck at step 2
        c.tick()
    beat_without_steps(c, clock, 11)
    assert c.stall is not None and c.stall.behind == ("worker:1",)
    for t in c.tasks:
        c.stacks.add(StacksReport(task=t, attempt=1, request=c.stall_request, text="x"), "h")
    c.tick()  # the stacks are in: the attempt fails and the next starts
    assert c.attempt == 2 and c.failed_task == "worker:1" and c.state == "STARTING"
    assert "stalled" in c.attempt_history[0].reason and c.stall is None


def test_a_session_waiting_for_cells_is_not_stalled(tmp_path):
    from tests.am.test_coordinator import Clock, FakeProvider
    from tony_jupyter.am.coordinator import Coordinator
    from tony_jupyter.session import session_spec

    _, spec = parse_job_args("--workers 2 " + STALL)
    clock, provider = Clock(), FakeProvider()
    c = Coordinator("s1", session_spec(spec, None), tmp_path, provider, {}, clock=clock)
    provider.bind(c.on_exit)
    c.start()
    register_all(c)
    run_steps(c, clock, 5)  # a cell that reported steps, then the session waits
    beat_without_steps(c, clock, 70)
    assert c.stall is None and c.state == "RUNNING"


@pytest.mark.parametrize(
    "conf, message",
    [
        ("tony.stall.action=pause", "tony.stall.action: expected one of warn, kill, restart"),
        ("tony.stall.factor=0", "tony.stall.factor"),
        (
            "tony.stall.ceiling-sec=5 --conf tony.stall.floor-sec=10",
            "tony.stall.ceiling-sec=5 is below tony.stall.floor-sec=10",
        ),
    ],
)
def test_bad_stall_settings_are_refused_before_anything_runs(conf, message):
    with pytest.raises(SpecError, match=message):
        parse_job_args(f"--workers 1 --conf {conf}")
