"""The AM's stack requests (am/stacks.py): which tasks a request goes to, the dumps kept for
the request they answer, an open request shared by a second asker."""

from tony_jupyter.am.stacks import REUSE_S, StackRequests
from tony_jupyter.core.protocol import StacksReport


def report(task: str, request: int, text: str = "x") -> StacksReport:
    return StacksReport(task=task, attempt=1, request=request, text=text)


def test_a_request_goes_to_each_asked_task_until_it_answers():
    now = [100.0]
    r = StackRequests(clock=lambda: now[0])
    n = r.ask(["worker:0", "worker:1"])
    assert n == 1 and r.for_task("worker:0") == 1 and r.for_task("ps:0") is None
    assert r.add(report("worker:0", 1), "h0")
    assert r.for_task("worker:0") is None and r.for_task("worker:1") == 1
    now[0] += 0.5
    half = r.answer(1)
    assert [t.task for t in half.tasks] == ["worker:0"] and half.missing == ("worker:1",)
    assert half.tasks[0].host == "h0" and half.seconds == 0.5
    assert r.add(report("worker:1", 1), "h1") and r.complete


def test_an_open_request_is_shared_and_a_late_or_foreign_dump_is_dropped():
    now = [100.0]
    r = StackRequests(clock=lambda: now[0])
    assert r.ask(["worker:0", "worker:1"]) == 1
    assert r.ask(["worker:1"]) == 1  # open, and asks no more than it: shared
    assert r.ask(["worker:0", "worker:2"]) == 2  # asks another task: a new request
    assert not r.add(report("worker:0", 1), "h")  # for the request before
    assert not r.add(report("worker:1", 2), "h")  # not asked of it
    now[0] += REUSE_S
    assert r.ask(["worker:0"]) == 3  # too old to share
    assert r.add(report("worker:0", 3), "h") and r.complete
    assert r.ask(["worker:0"]) == 4  # a complete request is never reused
    assert r.answer(3).tasks == ()  # a superseded request's dumps are gone
