"""Coordinator rules, driven with a fake provider and a fake clock (no processes)."""

import json

import pytest

from tony_jupyter.am.coordinator import Coordinator, StaleAttempt
from tony_jupyter.am.provider import Provider
from tony_jupyter.options import parse_job_args


class FakeProvider(Provider):
    def __init__(self):
        self.launched, self.stopped = [], []
        self.recorded, self.tracking = [], []  # the recovery log; endpoint_registered calls

        self.localizing_since, self.ran_at = {}, {}  # task id -> clock time (localizing)

    def localizing(self, attempt):
        return dict(self.localizing_since)

    def running_since(self, task_id, attempt):
        return self.ran_at.get(task_id)

    def record_event(self, event):
        self.recorded.append(event)

    def endpoint_registered(self, name, url, path_key=None):
        self.tracking.append((name, url, path_key))

    def launch(self, task, task_id, attempt, env):
        self.launched.append((task_id, attempt, env))

    def placement(self, task_id, attempt):
        return None

    def stop_task(self, task_id, attempt):
        self.stopped.append((task_id, attempt))

    def shutdown(self):
        pass


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def make(line, tmp_path):
    _, spec = parse_job_args(line)
    clock, provider = Clock(), FakeProvider()
    c = Coordinator("job1", spec, tmp_path, provider, {"BASE": "1"}, clock=clock)
    provider.bind(c.on_exit)
    c.start()
    return c, provider, clock


def register_all(c, attempt=1):
    for i, tid in enumerate(c.tasks):
        c.register(tid, attempt, "127.0.0.1", 5000 + i, 100 + i)


def test_rendezvous_builds_the_cluster_spec_once_all_registered(tmp_path):
    c, p, _ = make("--workers 2 --chief", tmp_path)
    assert [x[0] for x in p.launched] == ["chief:0", "worker:0", "worker:1"]
    assert p.launched[0][2]["TONY_TASK_ID"] == "chief:0" and p.launched[0][2]["BASE"] == "1"
    c.register("worker:0", 1, "h", 1, 1)
    assert c.cluster_spec is None and c.state == "STARTING"
    c.register("chief:0", 1, "h", 2, 2)
    c.register("worker:1", 1, "h", 3, 3)
    assert c.state == "RUNNING"
    assert c.cluster_spec == {"chief": ["h:2"], "worker": ["h:1", "h:3"]}


def test_job_succeeds_when_tracked_tasks_end_and_untracked_are_stopped(tmp_path):
    c, p, _ = make("--workers 2 --ps 1", tmp_path)
    register_all(c)
    c.on_exit("worker:0", 1, 0)
    assert c.state == "RUNNING"
    c.on_exit("worker:1", 1, 0)
    assert c.state == "SUCCEEDED"
    assert p.stopped == [("ps:0", 1)]
    assert (tmp_path / "status.json").exists()


def test_failed_worker_fails_the_job_with_its_traceback(tmp_path):
    c, _, _ = make("--workers 2", tmp_path)
    register_all(c)
    c.set_result("worker:1", 1, {"status": "error", "traceback": "Traceback...\nValueError: boom"})
    c.on_exit("worker:1", 1, 1)
    assert c.state == "FAILED" and c.failed_task == "worker:1"
    assert "worker:1 exited with code 1" in c.reason
    assert c.tasks["worker:1"].traceback.endswith("ValueError: boom")


def test_crashed_parameter_server_fails_the_job(tmp_path):
    c, _, _ = make("--workers 1 --ps 1", tmp_path)
    register_all(c)
    c.on_exit("ps:0", 1, 137, "killed by signal 9")
    assert c.state == "FAILED" and "ps:0 exited with code 137" in c.reason


def test_missed_heartbeats_fail_the_task(tmp_path):
    c, p, clock = make(
        "--workers 2 --conf tony.task.heartbeat-interval-ms=1000 "
        "--conf tony.task.max-missed-heartbeats=3",
        tmp_path,
    )
    register_all(c)
    clock.t += 2.5
    c.heartbeat("worker:0", 1, {"step": 5})
    c.tick()
    assert c.state == "RUNNING"
    clock.t += 1.0  # worker:1 silent for 3.5 s > 3 x 1 s
    c.tick()
    assert c.state == "FAILED" and "worker:1 missed 3 heartbeats" in c.reason
    assert ("worker:0", 1) in p.stopped


def test_a_late_beat_with_older_progress_does_not_undo_the_final_one(tmp_path):
    """The task's own final heartbeat and its sidecar's last beat race; the newest report
    (runtime.report's ``time``) stays."""
    c, _, _ = make("--workers 1", tmp_path)
    register_all(c)
    c.heartbeat("worker:0", 1, {"step": 60, "time": 200.0})  # the task's final report
    c.heartbeat("worker:0", 1, {"step": 56, "time": 190.0})  # the sidecar's, arriving late
    assert c.snapshot().task("worker:0").progress["step"] == 60
    c.heartbeat("worker:0", 1, {"step": 61, "time": 201.0})
    assert c.snapshot().task("worker:0").progress["step"] == 61


def test_registration_timeout_ends_the_job(tmp_path):
    c, _, clock = make("--workers 2 --conf tony.task.registration-timeout-sec=10", tmp_path)
    c.register("worker:0", 1, "h", 1, 1)
    clock.t += 11
    c.tick()
    assert c.state == "FAILED" and "worker:1 did not register within 10 s" in c.reason


def test_the_registration_clock_waits_for_a_container_being_localized(tmp_path):
    """A node unpacking a large packed environment for minutes is no fault of the task's: its
    registration clock starts when its container runs."""
    c, p, clock = make("--workers 2 --conf tony.task.registration-timeout-sec=10", tmp_path)
    c.register("worker:0", 1, "h", 1, 1)
    p.localizing_since["worker:1"] = clock.t
    clock.t += 300
    c.heartbeat("worker:0", 1, None)
    c.tick()
    assert c.state == "STARTING"
    # Out of localizing at +300 s: from then on, the 10 s of the registration timeout.
    del p.localizing_since["worker:1"]
    p.ran_at["worker:1"] = clock.t
    clock.t += 9
    c.heartbeat("worker:0", 1, None)
    c.tick()
    assert c.state == "STARTING"
    clock.t += 2
    c.heartbeat("worker:0", 1, None)
    c.tick()
    assert c.state == "FAILED" and "worker:1 did not register within 10 s" in c.reason


def test_a_container_localized_past_its_limit_fails_the_attempt_by_name(tmp_path):
    line = "--workers 1 --conf tony.task.localization-timeout-sec=60"
    c, p, clock = make(line, tmp_path)
    p.localizing_since["worker:0"] = clock.t
    clock.t += 59
    c.tick()
    assert c.state == "STARTING"
    clock.t += 2
    c.tick()
    assert c.state == "FAILED"
    assert "worker:0 still localizing after 60 s" in c.reason
    assert "tony.task.localization-timeout-sec" in c.reason


def test_worker_left_after_chief_is_stopped_after_grace(tmp_path):
    c, p, clock = make("--workers 2 --conf tony.task.completion-grace-sec=5", tmp_path)
    register_all(c)
    c.on_exit("worker:0", 1, 0)  # worker:0 is the chief when there is no chief task
    clock.t += 4
    c.tick()
    assert c.state == "RUNNING"
    clock.t += 2
    c.heartbeat("worker:1", 1, None)
    c.tick()
    assert c.state == "FAILED"
    assert "worker:1 still running 5 s after worker:0 finished" in c.reason
    assert ("worker:1", 1) in p.stopped


def test_job_timeout(tmp_path):
    c, _, clock = make("--workers 1 --timeout 30", tmp_path)
    register_all(c)
    clock.t += 31
    c.heartbeat("worker:0", 1, None)
    c.tick()
    assert c.state == "FAILED" and "timed out after 30 s" in c.reason


def test_failed_attempt_restarts_all_tasks_until_max_attempts(tmp_path):
    c, p, _ = make("--workers 2 --max-attempts 2", tmp_path)
    register_all(c)
    c.on_exit("worker:1", 1, 1)
    assert c.state != "FAILED" and c.attempt == 2
    assert ("worker:0", 1) in p.stopped
    assert [x[:2] for x in p.launched[-2:]] == [("worker:0", 2), ("worker:1", 2)]
    with pytest.raises(StaleAttempt):
        c.heartbeat("worker:0", 1, None)  # attempt 1's executors are told to stop
    c.on_exit("worker:0", 1, 143)  # the old attempt's exits are ignored
    assert c.state == "STARTING"
    register_all(c, attempt=2)
    c.on_exit("worker:0", 2, 1)
    assert c.state == "FAILED" and len(c.attempt_history) == 2


def test_kill(tmp_path):
    c, p, _ = make("--workers 2", tmp_path)
    register_all(c)
    c.kill("because")
    assert c.state == "KILLED" and c.reason == "because"
    assert sorted(p.stopped) == [("worker:0", 1), ("worker:1", 1)]
    c.on_exit("worker:0", 1, 143)
    assert c.tasks["worker:0"].state == "STOPPED" and c.state == "KILLED"


def test_events_are_logged_to_disk(tmp_path):
    c, _, _ = make("--workers 1", tmp_path)
    register_all(c)
    c.on_exit("worker:0", 1, 0)
    c.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == len(c.events) and '"SUCCEEDED"' in lines[-1]


def test_new_am_recovers_the_job_from_the_event_log_and_starts_the_next_attempt(tmp_path):
    first, _, _ = make("--workers 2", tmp_path / "am1")
    register_all(first)
    first.endpoints["tensorboard"] = "http://h:1/"
    first.emit("endpoint", name="tensorboard", url="http://h:1/")
    log = list(first.events)  # what the lost AM had written to staging (as JSON below)
    _, spec = parse_job_args("--workers 2")
    provider = FakeProvider()
    (tmp_path / "am2").mkdir()
    second = Coordinator("job1", spec, tmp_path / "am2", provider, {}, clock=Clock())
    provider.bind(second.on_exit)
    second.recover([e.to_json() for e in log])
    second.start()
    assert second.attempt == 2 and second.state == "STARTING"
    assert [x[1] for x in provider.launched] == [2, 2]
    assert second.endpoints == {"tensorboard": "http://h:1/"}
    assert second.events[: len(log)] == log  # the history goes on, same sequence numbers
    (lost,) = second.attempt_history
    assert lost.attempt == 1 and "the AM was lost" in lost.reason


def test_endpoint_keys_stay_in_the_recovery_log_and_a_new_am_recovers_them(tmp_path):
    first, p, _ = make("--workers 1", tmp_path / "am1")
    register_all(first)
    keys = {"key": "k" * 43, "path_key": "p" * 32}
    first.add_endpoint("tensorboard", "http://h:1/", keys)
    assert p.tracking == [("tensorboard", "http://h:1/", "p" * 32)]
    public = json.dumps([first.snapshot().to_json(), [e.to_json() for e in first.events]])
    first.close()
    public += (tmp_path / "am1" / "events.jsonl").read_text()
    assert "http://h:1/" in public and "k" * 43 not in public and "p" * 32 not in public
    (record,) = [e for e in p.recorded if e["kind"] == "endpoint"]
    assert record["key"] == "k" * 43 and record["path_key"] == "p" * 32

    _, spec = parse_job_args("--workers 1")
    (tmp_path / "am2").mkdir()
    second = Coordinator("job1", spec, tmp_path / "am2", FakeProvider(), {}, clock=Clock())
    second.recover(p.recorded)
    assert second.endpoints == {"tensorboard": "http://h:1/"}
    assert second.endpoint_keys == {"tensorboard": keys}
    assert "k" * 43 not in json.dumps([e.to_json() for e in second.events])  # without them
    assert second.events == first.events


def test_new_am_of_a_job_that_had_ended_only_reports_the_end(tmp_path):
    first, _, _ = make("--workers 1", tmp_path / "am1")
    first.kill("killed on request")
    _, spec = parse_job_args("--workers 1")
    provider = FakeProvider()
    (tmp_path / "am2").mkdir()
    second = Coordinator("job1", spec, tmp_path / "am2", provider, {}, clock=Clock())
    second.recover([e.to_json() for e in first.events])
    second.start()
    assert second.state == "KILLED" and provider.launched == []


def test_yarn_tracking_url_is_tensorboards_path_key():
    from tony_jupyter.am.yarn.provider import YarnProvider

    yarn = YarnProvider.__new__(YarnProvider)  # no JVM: only the hook's own rule
    yarn.endpoint_registered("tensorboard", "http://node1:6006/", "p" * 32)
    assert yarn.tracking_url == "http://node1:6006/" + "p" * 32 + "/"
    yarn.endpoint_registered("other", "http://node1:7000/", None)
    assert yarn.tracking_url == "http://node1:6006/" + "p" * 32 + "/"
