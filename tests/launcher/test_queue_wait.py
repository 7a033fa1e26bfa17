"""Why a YARN job waits, built from the RM's answers (their shapes as Hadoop 3.5's RM gives
them, trimmed) and worded once (waits.py); the notice before submitting. The real case: a queue
filled by one job, a second one waiting (tests/yarn/test_yarn_capacity.py)."""

from __future__ import annotations

from dataclasses import replace

from tony_jupyter.core.hadoopconf import Address
from tony_jupyter.core.protocol import Amount, JobSnapshot, JobState
from tony_jupyter.core.spec import JobSpec, TaskSpec
from tony_jupyter.core.waits import wait_text
from tony_jupyter.launcher.yarn import waiting
from tony_jupyter.launcher.yarn.rm import RMClient
from tony_jupyter.widgets import render


def res(mb: int, vcores: int) -> dict:
    return {"memory": mb, "vCores": vcores}


def default_queue(used=(5120, 7), am_used=(1024, 1), users=None, pending=0) -> dict:
    return {
        "queueName": "default",
        "queuePath": "root.default",
        "numPendingApplications": pending,
        "resources": {
            "resourceUsagesByPartition": [
                {
                    "partitionName": "",
                    "used": res(*used),
                    "amUsed": res(*am_used),
                    "amLimit": res(3072, 4),
                }
            ]
        },
        "capacities": {
            "queueCapacitiesByPartition": [
                {"partitionName": "", "effectiveMaxResource": res(6144, 8)}
            ]
        },
        "users": {} if users is None else {"user": users},
    }


class Answer:
    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class FakeRM(RMClient):
    def __init__(self, q: dict, apps: list[str]):
        super().__init__(Address("http://rm.invalid:8088", "a test"), "alice")
        self.answers = {
            "/scheduler": {"scheduler": {"schedulerInfo": {"queues": {"queue": [q]}}}},
            "/apps": {"apps": {"app": [{"id": a} for a in apps]}},
        }
        self.asked: list[tuple[str, dict]] = []

    def _request(self, method, path, ok=(200,), **kw):
        assert method == "GET"
        self.asked.append((path, kw.get("params") or {}))
        return Answer(self.answers[path])


ALICE = {
    "username": "alice",
    "resourcesUsed": res(1024, 1),
    "userResourceLimit": res(5504, 8),
}
APPS = ["application_1_0001", "application_1_0002", "application_1_0003"]


def test_a_wait_carries_the_queue_s_figures_as_the_rm_gives_them():
    rm = FakeRM(default_queue(users=[ALICE], pending=1), APPS)
    w = waiting.queue_wait(
        rm, "default", 100.0, ("worker:0",), Amount(2048, 1), None, APPS[2], "not yet"
    )
    assert w is not None
    assert (w.used, w.maximum, w.available) == (
        Amount(5120, 7),
        Amount(6144, 8),
        Amount(1024, 1),
    )
    assert (w.user_used, w.user_limit) == (Amount(1024, 1), Amount(5504, 8))
    assert (w.am_used, w.am_limit) == (Amount(1024, 1), Amount(3072, 4))
    assert w.apps_ahead == 2  # submitted before application_1_0003
    assert w.apps_pending == 1
    assert ("/apps", {"queue": "default", "states": "ACCEPTED,RUNNING"}) in rm.asked
    text = wait_text(w, 112.0)
    assert text.startswith("waiting 12 s for queue 'default': worker:0 ask 2048 MB, 1 vcores")
    assert "the queue uses 5120 MB, 7 vcores of 6144 MB, 8 vcores (1024 MB, 1 vcores free)" in text
    assert "its user's limit there: 5504 MB, 8 vcores (1024 MB, 1 vcores used)" in text
    assert "2 applications ahead; 1 waiting for their AM; RM: not yet" in text


def test_an_accepted_application_s_wait_names_the_am_limit():
    rm = FakeRM(default_queue(used=(3072, 3), am_used=(3072, 3)), APPS)
    w = waiting.queue_wait(rm, "default", 0.0, ("AM",), Amount(1024, 1), None, APPS[0])
    assert w is not None and w.user_limit is None  # alice holds nothing there yet
    assert w.apps_ahead == 0
    text = wait_text(w, 75.0)
    assert "waiting 1m 15s for queue 'default': the AM ask 1024 MB, 1 vcores" in text
    assert "its AMs use 3072 MB, 3 vcores of 3072 MB, 4 vcores" in text
    assert "its user's limit" not in text and "RM:" not in text


def test_an_unknown_queue_gives_no_wait():
    rm = FakeRM(default_queue(), [])
    assert waiting.queue_wait(rm, "nope", 0.0, ("AM",), Amount(1, 1)) is None


def spec(workers: int, vcores: int = 1) -> JobSpec:
    return JobSpec(name="n", tasks=(TaskSpec("worker", workers, 1024, vcores),))


def test_the_notice_says_when_the_queue_cannot_place_the_job_now():
    rm = FakeRM(default_queue(used=(5120, 7)), APPS)
    line = waiting.notice(rm, spec(1))  # 2048 MB, 2 vcores with its AM: 1 vcore free
    assert line.startswith("queue 'default' cannot place this job now: it asks for 2048 MB, 2")
    assert "1024 MB, 1 vcores free of 6144 MB, 8 vcores, 3 applications ahead" in line
    assert line.endswith("submitted anyway: it waits in the queue (the job's view says for what)")
    assert waiting.notice(FakeRM(default_queue(used=(0, 0)), []), spec(1)) == ""


def test_the_notice_counts_the_user_s_limit_and_the_am_limit():
    tight = {**ALICE, "resourcesUsed": res(5000, 1)}  # 504 MB left under alice's limit
    rm = FakeRM(default_queue(used=(1024, 1), users=[tight]), [])
    assert "free of 6144 MB" in waiting.notice(rm, spec(1))
    rm = FakeRM(default_queue(used=(3072, 3), am_used=(3072, 3)), [])
    assert "its AMs already use 3072 MB, 3 vcores of 3072 MB, 4 vcores" in waiting.notice(
        rm, spec(1)
    )


def test_the_task_ask_sums_the_waiting_tasks_from_the_spec():
    tasks = [
        {"type": "worker", "memory_mb": 2048, "vcores": 2, "gpus": 1, "node_label": "gpu"},
        {"type": "ps", "memory_mb": 512, "vcores": 1, "gpus": 0},
    ]
    got = waiting.task_ask({"tasks": tasks}, ["worker:1", "worker:2", "ps:0"])
    assert got == (Amount(4608, 5, 2), "gpu")


def test_the_widget_says_it_while_the_job_waits_and_not_once_it_ended():
    rm = FakeRM(default_queue(), APPS)
    w = waiting.queue_wait(rm, "default", 0.0, ("worker:0",), Amount(2048, 1))
    snap = JobSnapshot("application_1_0003", state=JobState.RUNNING, waiting=w)
    assert "for queue &#x27;default&#x27;: worker:0 ask 2048 MB" in render.header_html(snap)
    assert "the queue uses 5120 MB, 7 vcores" in render.report_text(snap)
    ended = replace(snap, state=JobState.KILLED)
    assert "waiting" not in render.report_text(ended)


def test_the_panel_s_row_carries_the_wait_in_words():
    from tony_jupyter.server_ext.jobs import summary

    rm = FakeRM(default_queue(), APPS)
    w = waiting.queue_wait(rm, "default", 0.0, ("worker:0",), Amount(2048, 1))
    snap = JobSnapshot("application_1_0003", backend="yarn", state=JobState.RUNNING, waiting=w)
    row = summary(snap)
    assert row["waiting"].startswith("waiting ")
    assert "for queue 'default': worker:0 ask 2048 MB, 1 vcores" in row["waiting"]
    assert summary(replace(snap, waiting=None))["waiting"] == ""
