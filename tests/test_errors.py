"""A failed job's error says what failed remotely, in its message and not only in the rendered
traceback, as ipyparallel's remote errors do."""

import traceback

from tony_jupyter.core.errors import JobFailedError


def remote_traceback(exc: BaseException) -> str:
    try:
        raise exc
    except BaseException:  # noqa: BLE001 - any exception, formatted as a task would
        return traceback.format_exc()


def test_message_names_the_task_and_ends_with_the_remote_exception():
    tb = remote_traceback(RuntimeError("boom from worker 1"))
    e = JobFailedError("tony_1", "FAILED", "worker:1 exited with code 1", "worker:1", tb)
    assert str(e) == (
        "job tony_1 FAILED: worker:1 exited with code 1; RuntimeError: boom from worker 1"
    )
    assert (e.remote_type, e.remote_message) == ("RuntimeError", "boom from worker 1")
    rendered = e._render_traceback_()
    assert rendered[1] == "--- remote traceback from worker:1 ---"
    assert rendered[2:] == tb.rstrip().splitlines()


def test_exceptions_without_a_message_and_from_modules():
    e = JobFailedError("j", "FAILED", "r", "worker:0", remote_traceback(KeyboardInterrupt()))
    assert str(e) == "job j FAILED: r; KeyboardInterrupt"
    import json

    try:
        json.loads("{")
    except json.JSONDecodeError:
        tb = traceback.format_exc()
    e = JobFailedError("j", "FAILED", "r", "worker:0", tb)
    assert e.remote_type == "json.decoder.JSONDecodeError"
    assert str(e).startswith("job j FAILED: r; json.decoder.JSONDecodeError: Expecting")


def test_no_remote_traceback_keeps_the_reason_alone():
    assert (
        str(JobFailedError("j", "KILLED", "killed on request")) == "job j KILLED: killed on request"
    )
    e = JobFailedError("j", "FAILED", "r", "worker:0", "SystemExit: 3")
    assert str(e) == "job j FAILED: r; SystemExit: 3"


def test_every_failed_task_is_carried_and_shown():
    tb0 = remote_traceback(RuntimeError("boom from worker 0"))
    tb1 = remote_traceback(ValueError("bad shard on worker 1"))
    e = JobFailedError(
        "tony_1",
        "FAILED",
        "worker:0 exited with code 1",
        "worker:0",
        tb0,
        others=(("worker:1", tb1), ("ps:0", "ps:0 exited with code -9")),
    )
    assert str(e) == (
        "job tony_1 FAILED: worker:0 exited with code 1; RuntimeError: boom from worker 0 "
        "(and 2 other failed: worker:1, ps:0)"
    )
    rendered = e._render_traceback_()
    at = rendered.index("--- worker:1 failed too ---")
    assert rendered[at + 1 :][: len(tb1.rstrip().splitlines())] == tb1.rstrip().splitlines()
    assert rendered[-2:] == ["--- ps:0 failed too ---", "ps:0 exited with code -9"]


def test_a_failed_snapshot_gives_the_blamed_task_first_and_every_other_failure():
    from tony_jupyter.core.protocol import JobSnapshot, JobState, TaskState, TaskView
    from tony_jupyter.job import failure

    def task(i: int, state: TaskState, **kw) -> TaskView:
        return TaskView(id=f"worker:{i}", type="worker", index=i, tracked=True, state=state, **kw)

    tb0 = remote_traceback(RuntimeError("first"))
    tb2 = remote_traceback(OSError("second"))
    snap = JobSnapshot(
        job_id="tony_2",
        state=JobState.FAILED,
        reason="worker:0 exited with code 1",
        failed_task="worker:0",
        tasks=(
            task(0, TaskState.FAILED, traceback=tb0, exit_code=1),
            task(1, TaskState.KILLED),  # stopped by the AM after the first failure: not one
            task(2, TaskState.FAILED, traceback=tb2, exit_code=1),
            task(3, TaskState.FAILED, exit_code=-9, diagnostics="OOM-killed"),
        ),
    )
    e = failure(snap)
    assert (e.task, e.remote_type, e.remote_message) == ("worker:0", "RuntimeError", "first")
    assert e.others == (
        ("worker:2", tb2),
        ("worker:3", "worker:3 exited with code -9 (OOM-killed)"),
    )
