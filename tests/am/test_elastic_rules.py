"""The AM's rules for an elastic PyTorch job (am/elastic.py), with a fake provider and clock:
when the rendezvous endpoint goes out, which lost worker is replaced, when the job ends."""

from test_coordinator import make

from tony_jupyter.core.frameworks import ELASTIC_MAX_RESTARTS

ELASTIC = "--backend local --framework pytorch --workers 2:3"


def test_the_rendezvous_goes_out_once_worker_0_and_min_workers_registered(tmp_path):
    c, p, _ = make(ELASTIC, tmp_path)
    assert [x[0] for x in p.launched] == ["worker:0", "worker:1", "worker:2"]  # MAX
    c.register("worker:1", 1, "h", 1, 1)
    c.register("worker:2", 1, "h", 2, 2)
    assert c.cluster_spec is None  # MIN are in, but not worker:0, the rendezvous host
    c.register("worker:0", 1, "h", 3, 3)
    assert c.cluster_spec == {"worker": ["h:3", "h:1", "h:2"]} and c.state == "RUNNING"


def test_a_late_worker_joins_a_running_job(tmp_path):
    c, _, _ = make(ELASTIC, tmp_path)
    c.register("worker:0", 1, "h", 1, 1)
    c.register("worker:1", 1, "h", 2, 2)
    assert c.cluster_spec == {"worker": ["h:1", "h:2"]}
    c.register("worker:2", 1, "h", 3, 3)
    assert c.tasks["worker:2"].state == "RUNNING"


def test_a_lost_worker_is_replaced_alone_and_the_job_goes_on(tmp_path):
    c, p, _ = make(ELASTIC, tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    c.on_exit("worker:1", 1, 137, "killed by signal 9")
    assert c.state == "RUNNING" and c.attempt == 1 and c.attempt_history == []
    assert p.launched[-1][:2] == ("worker:1", 2)
    assert p.launched[-1][2]["TONY_ATTEMPT"] == "2"
    assert {t: c.tasks[t].attempt for t in c.tasks} == {"worker:0": 1, "worker:1": 2, "worker:2": 1}
    c.on_exit("worker:1", 1, 137)  # the old attempt's exit, reported again: ignored
    assert c.tasks["worker:1"].state == "LAUNCHED"
    c.register("worker:1", 2, "h", 20, 20)
    assert c.tasks["worker:1"].state == "RUNNING"
    for tid in ("worker:0", "worker:2", "worker:1"):
        c.on_exit(tid, c.tasks[tid].attempt, 0)
    assert c.state == "SUCCEEDED"
    assert c.snapshot().task("worker:1").attempt == 2


def test_losing_worker_0_or_a_failing_cell_fails_the_job(tmp_path):
    c, _, _ = make(ELASTIC, tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    c.on_exit("worker:0", 1, 137)
    assert c.state == "FAILED" and "worker:0 exited with code 137" in c.reason

    c, _, _ = make(ELASTIC, tmp_path / "2")
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    c.set_result("worker:2", 1, {"status": "error", "traceback": "ZeroDivisionError"})
    c.on_exit("worker:2", 1, 1)
    assert c.state == "FAILED" and c.failed_task == "worker:2"


def test_replacements_stop_at_the_limit(tmp_path):
    c, _, _ = make(ELASTIC, tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    for n in range(ELASTIC_MAX_RESTARTS):
        c.on_exit("worker:2", 1 + n, 137)
        c.register("worker:2", 2 + n, "h", 30 + n, 30 + n)
    assert c.state == "RUNNING"
    c.on_exit("worker:2", 1 + ELASTIC_MAX_RESTARTS, 137)
    assert c.state == "FAILED"


def test_a_worker_that_never_joined_is_not_waited_for(tmp_path):
    c, p, _ = make(ELASTIC, tmp_path)
    c.register("worker:0", 1, "h", 1, 1)
    c.register("worker:1", 1, "h", 2, 2)
    c.on_exit("worker:0", 1, 0)
    c.on_exit("worker:1", 1, 0)
    assert c.state == "SUCCEEDED" and ("worker:2", 1) in p.stopped


def test_a_silent_worker_is_stopped_and_replaced(tmp_path):
    c, p, clock = make(ELASTIC + " --conf tony.task.max-missed-heartbeats=3", tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    clock.t += 2.0
    for tid in ("worker:0", "worker:2"):
        c.heartbeat(tid, 1, None)
    clock.t += 2.0  # worker:1 silent for 4 s, above 3 x 1 s
    c.tick()
    assert ("worker:1", 1) in p.stopped and p.launched[-1][:2] == ("worker:1", 2)
    assert c.state == "RUNNING"


def test_the_value_is_rank_0s_whichever_task_it_ran_on_and_whenever_the_others_report(tmp_path):
    c, _, _ = make(ELASTIC, tmp_path)
    for i in range(3):
        c.register(f"worker:{i}", 1, "h", 10 + i, i)
    rank0 = {"status": "ok", "value": "cGlja2xl"}
    c.set_result("worker:2", 1, rank0)  # the last round put rank 0 on worker:2
    c.set_result("worker:0", 1, {"status": "ok"})  # worker:0 (the chief's id) reports after
    c.set_result("worker:1", 1, {"status": "ok"})
    assert c.result == rank0
