"""The exclusion of a lost task's host (am/exclusions.py): the rule alone, then through the
Coordinator with a fake provider that says where it put each task and what it excluded."""

from tests.am.test_coordinator import Clock, FakeProvider
from tony_jupyter.am.coordinator import Coordinator
from tony_jupyter.am.exclusions import MAX_S, Exclusions
from tony_jupyter.am.provider import Placement
from tony_jupyter.options import parse_job_args


def test_a_host_is_let_back_in_when_tasks_waited_for_a_container_or_after_max_s():
    ex = Exclusions(wait_s=30)
    assert ex.exclude("worker2", 100.0) and not ex.exclude("worker2", 100.0)
    # The next attempt's tasks got containers elsewhere: worker2 stays out...
    assert ex.due(129.0, None) == [] and ex.due(100.0 + MAX_S - 1, None) == []
    # ... until MAX_S have passed, whatever else happens.
    assert ex.due(100.0 + MAX_S, None) == ["worker2"]
    # Tasks waiting for a container since 110 (their attempt's start): no other node took them
    # within wait_s of the later of that and the exclusion.
    assert ex.due(139.9, 110.0) == [] and ex.due(140.0, 110.0) == ["worker2"]
    assert ex.due(130.0, 50.0) == ["worker2"]  # waiting since before: counted from the exclusion
    ex.lift(["worker2"])
    assert ex.hosts == [] and ex.due(10_000.0, 0.0) == []


def test_wait_zero_turns_exclusion_off():
    ex = Exclusions(wait_s=0)
    assert not ex.on and not ex.exclude("worker2", 1.0) and ex.hosts == []


class PlacingProvider(FakeProvider):
    """Puts every task of attempt 1 on worker2; records exclude_hosts; tasks of ``waiting``
    attempts have no container."""

    def __init__(self):
        super().__init__()
        self.excluded: list[tuple[list[str], list[str]]] = []
        self.waiting: set[int] = set()

    def placement(self, task_id, attempt):
        return Placement("worker2" if attempt == 1 else "worker3", f"c_{attempt}_{task_id}")

    def exclude_hosts(self, add, remove):
        self.excluded.append((add, remove))

    def unallocated(self, attempt):
        return ["worker:0", "worker:1"] if attempt in self.waiting else []


def _lose_a_task(line, tmp_path):
    _, spec = parse_job_args(
        f"{line} --max-attempts 3 --conf tony.task.heartbeat-interval-ms=1000 "
        "--conf tony.task.max-missed-heartbeats=3"
    )
    clock, provider = Clock(), PlacingProvider()
    c = Coordinator("job1", spec, tmp_path, provider, {}, clock=clock)
    provider.bind(c.on_exit)
    c.start()
    for i, tid in enumerate(c.tasks):
        c.register(tid, 1, "worker2", 5000 + i, 100 + i)
    clock.t += 2.5
    c.heartbeat("worker:0", 1, {})
    clock.t += 1.0  # worker:1 silent for 3.5 s > 3 x 1 s
    c.tick()
    return c, provider, clock


def test_the_host_of_a_task_lost_by_missed_heartbeats_sits_out_the_next_attempt(tmp_path):
    c, p, clock = _lose_a_task("--workers 2", tmp_path)
    assert c.attempt == 2
    # Excluded before attempt 2's launches were asked for, and said so in the attempt's reason.
    assert p.excluded == [(["worker2"], [])]
    assert "worker:1 missed 3 heartbeats" in c.attempt_history[0].reason
    assert "its host worker2 is excluded" in c.attempt_history[0].reason
    # Attempt 2's tasks got containers (on worker3): worker2 stays out.
    clock.t += 120
    c.tick()
    assert p.excluded == [(["worker2"], [])]


def test_a_job_no_other_host_can_take_waits_for_its_host_again(tmp_path):
    # A one-node partition: attempt 2's tasks get no container while worker2 is excluded;
    # after the exclusion wait (30 s by default) it is let back in, and the job waits for it.
    c, p, clock = _lose_a_task("--workers 2", tmp_path)
    p.waiting.add(2)
    clock.t += 29
    c.tick()
    assert p.excluded == [(["worker2"], [])] and c.exclusions.hosts == ["worker2"]
    clock.t += 1
    c.tick()
    assert p.excluded == [(["worker2"], []), ([], ["worker2"])] and c.exclusions.hosts == []
    assert c.attempt == 2 and c.state == "STARTING"  # still waiting, not failed


def test_exclusion_wait_zero_excludes_nothing(tmp_path):
    c, p, _ = _lose_a_task("--workers 2 --conf tony.task.exclusion-wait-sec=0", tmp_path)
    assert c.attempt == 2 and p.excluded == []
    assert "excluded" not in c.attempt_history[0].reason
