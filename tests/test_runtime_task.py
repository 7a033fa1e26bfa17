"""tony_jupyter.task(): this process's task as its executor's variables name it, read through
the one task id parser (core/protocol/taskid.py)."""

from tony_jupyter import runtime
from tony_jupyter.core.protocol import ExecutorEnv

V = ExecutorEnv.var


def test_the_task_is_read_from_the_executors_variables(monkeypatch):
    monkeypatch.setenv(V("task_id"), "ps:2")
    monkeypatch.setenv(V("attempt"), "3")
    monkeypatch.setenv(V("chief"), "chief:0")
    assert runtime.task() == {"type": "ps", "index": 2, "attempt": 3, "is_chief": False}
    monkeypatch.setenv(V("task_id"), "chief:0")
    assert runtime.task()["is_chief"] is True


def test_outside_a_task_it_is_the_first_worker(monkeypatch):
    for name in ("task_id", "attempt", "chief"):
        monkeypatch.delenv(V(name), raising=False)
    assert runtime.task() == {"type": "worker", "index": 0, "attempt": 1, "is_chief": True}
