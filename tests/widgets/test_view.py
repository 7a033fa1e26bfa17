"""JobView and follow() on handmade snapshots and a fake client: the widget's model state."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from tony_jupyter.core.protocol import JobSnapshot, JobState
from tony_jupyter.widgets import JobView, follow
from tony_jupyter.widgets.view import BAR_MAX

T0 = 1_000.0


def task(tid: str, state: str = "RUNNING", beat: float | None = T0 + 9, **kw) -> dict:
    type_, _, index = tid.partition(":")
    t = {
        "id": tid,
        "type": type_,
        "index": int(index),
        "tracked": type_ != "ps",
        "state": state,
        "host": "127.0.0.1" if state != "LAUNCHED" else None,
        "port": 40000 + int(index),
        "pid": 1,
        "exit_code": None,
        "launched_at": T0,
        "registered_at": T0 + 1,
        "finished_at": None,
        "last_heartbeat": beat,
        "progress": {},
        "traceback": None,
        "diagnostics": "",
    }
    t.update(kw)
    return t


def snap(
    state: str = "RUNNING", tasks: list | None = None, now: float = T0 + 10, **kw
) -> JobSnapshot:
    s = {
        "job_id": "job-1",
        "name": "mnist",
        "backend": "local",
        "state": state,
        "reason": "",
        "failed_task": None,
        "attempt": 1,
        "max_attempts": 1,
        "attempts": [],
        "started": T0,
        "finished": None,
        "now": now,
        "endpoints": {},
        "chief": "worker:0",
        "tasks": tasks if tasks is not None else [task("worker:0"), task("worker:1")],
    }
    s.update(kw)
    return JobSnapshot.from_json(s)


def test_header_state_and_task_rows():
    view = JobView("job-1")
    assert view.state_text == "NEW"
    view.update(
        snap(
            "STARTING",
            [
                task("worker:0", "LAUNCHED", beat=None),
                task("worker:1", "REGISTERED", beat=T0 + 8.5),
            ],
        )
    )
    assert view.state_text == "STARTING"
    rows = view.task_rows
    assert rows[0] == {
        "task": "worker:0",
        "address": "",
        "state": "LAUNCHED",
        "heartbeat_age": None,
        "step": None,
        "loss": None,
        "cpu_percent": None,
        "rss_bytes": None,
        "gpus": [],
        "exit_code": None,
        "own_attempt": None,
    }
    assert rows[1]["address"] == "127.0.0.1:40001" and rows[1]["heartbeat_age"] == 1.5

    view.update(
        snap(
            tasks=[
                task("worker:0", progress={"step": 7, "loss": 0.5}),
                task("worker:1", "FAILED", exit_code=3, traceback="ValueError: x"),
            ]
        )
    )
    assert view.state_text == "RUNNING"
    assert view.task_rows[0]["step"] == 7 and view.task_rows[0]["loss"] == 0.5
    # a task that ended shows its exit code, not a growing heartbeat age
    assert view.task_rows[1]["exit_code"] == 3 and view.task_rows[1]["heartbeat_age"] is None
    header = view.header.value
    assert "job-1" in header and "mnist" in header and "RUNNING" in header
    assert "10.0 s" in header and "attempt 1/1" in header
    assert "ValueError: x" in view.tracebacks.value
    assert "127.0.0.1:40000" in view.tasks_html.value and "FAILED" in view.tasks_html.value
    assert view.tabs.titles == ("worker:0", "worker:1")


def test_resource_use_in_the_task_table():
    view = JobView("job-1", mode="widget")
    gpu = {"index": 0, "utilization": 87.0, "memory_used_mb": 3072.0, "memory_total_mb": 16e3}
    view.update(
        snap(
            tasks=[
                task("worker:0", cpu_percent=150.0, rss_bytes=300 << 20, gpus=[gpu]),
                task("worker:1", cpu_percent=2.0, rss_bytes=100 << 20),
            ]
        )
    )
    rows = view.task_rows
    assert (rows[0]["cpu_percent"], rows[0]["rss_bytes"]) == (150.0, 300 << 20)
    assert rows[0]["gpus"] == [(87.0, 3072.0)] and rows[1]["gpus"] == []
    table = view.tasks_html.value
    assert "150%" in table and "300 MiB" in table and "87% 3.0 GiB" in table
    assert "100 MiB" in table


def test_each_tasks_use_drawn_as_sparklines_and_idle_gpus_named():
    view = JobView("job-1", mode="widget")
    gpu = {"index": 0, "utilization": 3.0, "memory_used_mb": 3072.0}
    for beat in range(40):  # a beat a second, the GPU idle throughout
        view.update(
            snap(
                tasks=[
                    task("worker:0", beat=T0 + beat, cpu_percent=10.0 + beat, gpus=[gpu]),
                    task("worker:1", beat=T0 + beat, rss_bytes=(100 + beat) << 20),
                ],
                now=T0 + beat,
            )
        )
    table = view.tasks_html.value
    row0, row1 = table.split("<tr data-task='worker:0'>")[1].split("<tr data-task='worker:1'>")
    assert "data-series='cpu'" in row0 and "CPU: now 49%, peak 49%" in row0
    assert "data-series='gpu'" in row0 and "data-series='gpu_memory'" in row0
    assert "data-series='memory'" not in row0  # worker:0 sent no memory
    assert "data-series='memory'" in row1 and "memory: now 139 MiB" in row1
    assert "data-series='cpu'" not in row1
    assert "GPUs idle 100% of the last 39 s" in view.header.value
    view.finish(snap(state="SUCCEEDED", now=T0 + 41))
    assert "data-series='cpu'" in view.report_html  # the saved report keeps them
    assert "GPUs idle" not in view.header.value  # an ended job is not waiting on anything


def test_the_loss_chart_live_and_in_the_saved_report():
    view = JobView("job-1", mode="widget")
    for step in range(1, 6):
        progress = {"step": step, "total_steps": 5, "loss": 1.0 / step, "accuracy": step / 5}
        view.update(snap(tasks=[task("worker:0", progress=progress)]))
    live = view.chart.value
    assert live.count("<svg") == 2 and "<polyline" in live
    assert live.index("loss") < live.index("accuracy") and "loss 0.2" in live
    view.finish(snap("SUCCEEDED", tasks=[task("worker:0", "SUCCEEDED", exit_code=0)]))
    assert view.report_html is not None and live in view.report_html


def test_attempt_history_and_endpoints_in_header():
    view = JobView("job-1")
    view.update(
        snap(
            "STARTING",
            attempt=2,
            max_attempts=3,
            reason="attempt 1 failed: worker:1 exited with code 1",
            attempts=[{"attempt": 1, "reason": "worker:1 exited with code 1", "task": "worker:1"}],
            endpoints={"tensorboard": "http://h:1/tb"},
        )
    )
    header = view.header.value
    assert "attempt 2/3" in header and "worker:1 exited with code 1" in header
    assert 'href="/tony/proxy/job-1/tensorboard/"' in header  # through the server's proxy
    assert "http://h:1" not in header
    assert view.tabs.titles[-1] == "TensorBoard"
    assert 'src="/tony/proxy/job-1/tensorboard/"' in view.panes["TensorBoard"].value


def test_progress_bar_label_and_end_styles():
    view = JobView("job-1")
    view.update(snap())
    assert view.progress_value is None and view.progress_bar.value == 0
    p = {
        "epochs": 3,
        "steps": 100,
        "epoch": 2,
        "step": 145,
        "batch": 45,
        "loss": 0.43214,
        "accuracy": 0.91,
        "time": 5.0,
    }
    view.update(snap(tasks=[task("worker:0", progress=p), task("worker:1")]))
    assert view.progress_value == pytest.approx(145 / 300)
    assert view.progress_bar.value == round(145 / 300 * BAR_MAX)
    assert view.progress_label.value == "epoch 2/3 · step 145 · loss 0.4321 · accuracy 0.91"
    assert view.progress_right.value == "48%"
    # reports are merged: epoch 3 has begun, its first batch not yet come
    p.update(epoch=3, epoch_done=2, batch=100)
    view.update(snap(tasks=[task("worker:0", progress=p)]))
    assert view.progress_value == pytest.approx(2 / 3)

    view.update(snap("FAILED", tasks=[task("worker:0", progress=p)]))
    assert view.progress_bar.bar_style == "danger"
    ok = JobView("job-2")
    ok.update(snap("SUCCEEDED"))
    assert ok.progress_bar.value == BAR_MAX and ok.progress_bar.bar_style == "success"


def test_per_epoch_progress_without_batches():
    view = JobView("job-1")
    view.update(
        snap(
            tasks=[
                task("worker:0", progress={"epochs": 4, "epoch": 2, "epoch_done": 2, "loss": 1.0})
            ]
        )
    )
    assert view.progress_value == pytest.approx(0.5)


def test_logs_split_chunks_and_keep_last_lines():
    view = JobView("job-1", max_log_lines=3)
    view.update(snap())
    view.append_log("worker:0", "one\ntw")
    view.append_log("worker:0", "o\r\nthree\nfour <b>\nfi")
    assert view.log_text("worker:0") == "two\nthree\nfour <b>\nfi"  # 3 lines + the partial
    view.update(snap())  # flushes panes a chatty task left pending
    assert "four &lt;b&gt;" in view.panes["worker:0"].value
    assert view.log_text("ps:0") == ""


def test_kill_button_calls_back_and_disables():
    calls = []
    view = JobView("job-1", on_kill=lambda: calls.append(1))
    view.update(snap())
    assert not view.kill_button.disabled
    view.kill_button.click()
    assert calls == [1] and view.kill_button.disabled
    view.finish(snap("KILLED", reason="killed from the widget", finished=T0 + 12))
    assert view.kill_button.disabled and view.state_text == "KILLED"
    assert JobView("job-2").kill_button.disabled  # nothing to call


def wait_stacks(view: JobView) -> None:
    for t in threading.enumerate():
        if t.name == "tony-stacks":
            t.join(10)


def test_the_stacks_button_fetches_and_shows_them_the_odd_one_marked():
    text = "2 task(s) in 2 group(s) of the same stacks\n\nworker:0\n  thread 1:\n\n" + (
        '>>> worker:1 (differs)\n  thread 1:\n    File "c.py", line 4 in <b>sleep'
    )
    view = JobView("job-1", on_stacks=lambda: text)
    view.update(snap())
    assert not view.stacks_button.disabled
    view.stacks_button.click()
    wait_stacks(view)
    assert view.stacks_text == text
    shown = view.stacks_html.value
    assert "<b style='color:" in shown and "&gt;&gt;&gt; worker:1 (differs)" in shown
    assert "&lt;b&gt;sleep" in shown  # what tasks send is escaped
    assert not view.stacks_button.disabled  # may be asked again
    view.finish(snap("SUCCEEDED", finished=T0 + 12))
    assert view.stacks_button.disabled
    assert JobView("job-2").stacks_button.disabled  # nothing to call


def test_a_stacks_failure_is_shown():
    def boom() -> str:
        raise RuntimeError("AM unreachable")

    view = JobView("job-1", on_stacks=boom)
    view.update(snap())
    view.stacks_button.click()
    wait_stacks(view)
    assert "stacks failed: AM unreachable" in view.stacks_html.value


STALL_DUMP = (
    'Current thread 0x01 (most recent call first):\n  File "/c/src/cell.py", line {} in {}\n'
)


def stalled(stacks: bool) -> dict:
    return {
        "since": T0 + 2,
        "marked": T0 + 9,
        "threshold_s": 6.0,
        "behind": ["worker:1"],
        "steps": {"worker:0": "step 5", "worker:1": "step 4"},
        "action": "warn",
        "stacks": [
            {"task": "worker:0", "text": STALL_DUMP.format(7, "all_reduce")},
            {"task": "worker:1", "text": STALL_DUMP.format(4, "wait_here")},
        ]
        if stacks
        else [],
    }


def test_a_stalled_job_says_since_when_who_is_behind_and_shows_the_stacks(capsys):
    view = JobView("job-1", mode="text")
    view.update(snap(stall=stalled(stacks=False)))
    view.update(snap(stall=stalled(stacks=True)))
    header = view.header.value
    assert "stalled since " in header and "for 8.0 s (limit 6.0 s)" in header
    assert "furthest behind: worker:1" in header
    assert "worker:0 at step 5; worker:1 at step 4" in header
    pane = view.stacks_html.value
    assert "&gt;&gt;&gt; worker:1 (furthest behind)" in pane and "wait_here" in pane
    out = capsys.readouterr().out
    assert out.count("[job] stalled since ") == 2  # as marked, and once its stacks came
    assert "line 7 in all_reduce" in out and ">>> worker:1 (furthest behind)" in out
    view.update(snap())  # steps go on
    assert "stalled" not in view.header.value
    assert "[job] no longer stalled: steps go on" in capsys.readouterr().out


def test_kill_failure_is_shown_and_can_be_retried():
    def boom():
        raise RuntimeError("AM unreachable")

    view = JobView("job-1", on_kill=boom)
    view.update(snap())
    view.kill_button.click()
    assert not view.kill_button.disabled and "AM unreachable" in view.header.value


def test_report_has_state_tasks_traceback_and_log_tail():
    view = JobView("job-1")
    view.update(snap())
    view.append_log("worker:0", "".join(f"line {i}\n" for i in range(120)))
    view.append_log("worker:1", "Traceback\nValueError: bad")
    final = snap(
        "FAILED",
        reason="worker:1 exited with code 1",
        failed_task="worker:1",
        finished=T0 + 20,
        tasks=[
            task("worker:0", "STOPPED", exit_code=-15),
            task("worker:1", "FAILED", exit_code=1, traceback="ValueError: bad"),
        ],
    )
    view.finish(final)
    html = view.report_html
    assert "FAILED" in html and "worker:1 exited with code 1" in html and "20.0 s" in html
    assert "127.0.0.1:40001" in html and "ValueError: bad" in html
    assert "line 119" in html and "line 69\n" not in html and "line 70" in html
    assert "last 50 of 120 lines" in html
    assert "<details open><summary><code>worker:1</code>" in html
    assert view.log_text("worker:1").endswith("ValueError: bad")  # the partial line flushed
    view.update(snap())  # after the end nothing moves
    assert view.state_text == "FAILED"


def test_text_fallback_prints_states_and_prefixed_lines(capsys):
    view = JobView("job-1")
    view.display()  # no kernel here: the terminal fallback
    assert view.mode == "text"
    view.update(snap(tasks=[task("worker:0"), task("worker:1")]))
    view.append_log("worker:1", "hello\npart")
    view.update(snap(tasks=[task("worker:0"), task("worker:1")]))  # nothing changed
    view.finish(
        snap(
            "SUCCEEDED",
            finished=T0 + 30,
            tasks=[
                task("worker:0", "SUCCEEDED", exit_code=0),
                task("worker:1", "SUCCEEDED", exit_code=0),
            ],
        )
    )
    out = capsys.readouterr().out.splitlines()
    assert "[worker:1] hello" in out and "[worker:1] part" in out
    assert "[worker:0] RUNNING on 127.0.0.1:40000" in out
    assert "[worker:1] SUCCEEDED on 127.0.0.1:40001 (exit 0)" in out
    assert out.count("[worker:0] RUNNING on 127.0.0.1:40000") == 1
    assert any(line.startswith("[job] tony job job-1 (mnist) · SUCCEEDED · 30.0 s") for line in out)


class FakeClient:
    """Plays a scripted job: snapshot i is served at poll i; logs per (task, attempt)."""

    job_id = "job-1"

    def __init__(self, snaps: list[dict], logs: dict[tuple[str, int], list[str]]):
        self.snaps, self.logs_by_poll, self.poll = snaps, logs, 0
        self.files: dict[tuple[str, int], str] = {}
        self.events_calls = 0

    def snapshot(self) -> JobSnapshot:
        s = self.snaps[min(self.poll, len(self.snaps) - 1)]
        # the log files grow as the job goes: what each poll has written so far
        for key, chunks in self.logs_by_poll.items():
            self.files[key] = "".join(chunks[: self.poll + 1])
        return s

    def events(self, since: int, timeout: float = 0) -> tuple[list[dict], int]:
        self.events_calls += 1
        self.poll += 1
        return [{"seq": since}], since + 1

    def logs(self, task: str, offset: int = 0, attempt: int = 0) -> tuple[str, int]:
        data = self.files.get((task, attempt), "")
        return data[offset:], len(data)

    def feed(self, since, version, attempt, offsets, timeout=0):
        return None  # no AM to ask: follow() reads what the job left (snapshot, events, logs)


class FakeFeedClient(FakeClient):
    """The same scripted job through the AM's feed: one answer per look, with the snapshot and
    each task's log past the follower's offsets (for the attempt it asks about)."""

    def feed(self, since, version, attempt, offsets, timeout=0):
        if version:  # the first look answers at once; each later one waits for a change
            self.poll += 1
        s = self.snapshot()
        attempt = attempt or s.attempt or 1
        logs = {}
        for t, offset in offsets.items():
            data = self.files.get((t, attempt), "")
            logs[t] = {"text": data[offset:], "offset": len(data), "more": False}
        return {
            "version": version + 1,
            "snapshot": s.to_json(),
            "attempt": attempt,
            "events": [],
            "next": since,
            "logs": logs,
        }


@pytest.mark.parametrize("fake", [FakeClient, FakeFeedClient], ids=["from-disk", "feed"])
def test_follow_marks_attempt_boundary_and_drains_the_old_attempt(fake):
    a1 = snap(tasks=[task("worker:0")])
    a2 = snap(
        "RUNNING",
        tasks=[task("worker:0")],
        attempt=2,
        max_attempts=2,
        attempts=[{"attempt": 1, "reason": "worker:0 exited with code 1", "task": "worker:0"}],
    )
    done = dataclasses.replace(a2, state=JobState.SUCCEEDED, finished=T0 + 40)
    client = fake(
        [a1, a2, done],
        {
            # "late" reaches attempt 1's file only after the job moved on to attempt 2
            ("worker:0", 1): ["a1 start\n", "a1 late\n", ""],
            ("worker:0", 2): ["", "a2 start\n", "a2 end\n"],
        },
    )
    view = JobView("job-1")
    final = follow(client, view, poll_s=0)
    assert final == done and view.finished and view.state_text == "SUCCEEDED"
    lines = view.log_text("worker:0").splitlines()
    assert lines[:2] == ["a1 start", "a1 late"]
    assert lines[2].startswith("──── attempt 2/2 (attempt 1 ended: worker:0 exited")
    assert lines[3:] == ["a2 start", "a2 end"]
    assert "a2 end" in view.report_html


def test_follow_stops_on_request_without_finishing():
    client = FakeClient([snap()], {})
    stop = threading.Event()
    stop.set()
    view = JobView("job-1")
    assert follow(client, view, stop=stop, poll_s=0).state == "RUNNING"
    assert not view.finished and client.events_calls == 0


def test_follow_in_a_background_thread():
    client = FakeClient(
        [snap(), snap(), snap("SUCCEEDED", finished=T0 + 5)], {("worker:1", 1): ["x\n", "y\n"]}
    )
    view = JobView("job-1")
    got: list[JobSnapshot] = []
    thread = threading.Thread(target=lambda: got.append(follow(client, view, poll_s=0)))
    thread.start()
    thread.join(10)
    assert got and got[0].state == "SUCCEEDED"
    assert view.log_text("worker:1") == "x\ny"


def test_follow_stopped_as_the_job_ends_still_finishes_the_view():
    stop = threading.Event()
    client = FakeClient([snap(), snap("KILLED", reason="interrupted", finished=T0 + 3)], {})
    real_events = client.events

    def events(since, timeout=0):
        stop.set()  # Ctrl-C: the magic kills the job and sets stop while follow() waits
        return real_events(since, timeout)

    client.events = events
    view = JobView("job-1")
    assert follow(client, view, stop=stop, poll_s=0).state == "KILLED"
    assert view.finished and "interrupted" in view.report_html
