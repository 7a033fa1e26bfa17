"""A failed job's error says what failed remotely, in its message and not only in the rendered
traceback, as ipyparallel's remote errors do."""

import traceback

from tony_jupyter.errors import JobFailedError


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
