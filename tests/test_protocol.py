"""The protocol's records: one JSON form each, read back unchanged, and the schema the
labextension's TypeScript types are generated from (labextension/schema/) kept in step."""

import json
from dataclasses import fields, replace
from pathlib import Path

import jsonschema
import pytest

from tony_jupyter.core import protocol
from tony_jupyter.core.protocol import (
    ExecutorEnv,
    FailedAttempt,
    JobSnapshot,
    JobState,
    JobSummary,
    TaskState,
    TaskView,
)
from tony_jupyter.core.stackgroups import grouped

SCHEMA = json.loads(
    (Path(__file__).parents[1] / "labextension/schema/protocol.schema.json").read_text()
)
RECORDS = (
    TaskView,
    FailedAttempt,
    JobSnapshot,
    protocol.TaskSummary,
    JobSummary,
    protocol.Stall,
    protocol.TaskStacks,
    protocol.StackThread,
    protocol.StackGroup,
    protocol.StackGroups,
    protocol.QueueWait,
    protocol.Amount,
)


def snapshot() -> JobSnapshot:
    task = TaskView(
        "worker:0",
        "worker",
        0,
        True,
        TaskState.RUNNING,
        host="127.0.0.1",
        port=4000,
        pid=12,
        last_heartbeat=2.0,
        rss_bytes=1 << 20,
        progress={"epoch": 1, "loss": 0.5},
    )
    return JobSnapshot(
        "tony_1",
        name="t",
        state=JobState.RUNNING,
        attempt=2,
        max_attempts=3,
        attempts=(FailedAttempt(1, "worker:1 exited with code 1", "worker:1"),),
        started=1.0,
        now=3.0,
        endpoints={"tensorboard": "http://127.0.0.1:6006"},
        chief="worker:0",
        tasks=(task,),
    )


def validator(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({**SCHEMA, "$ref": f"#/definitions/{name}"})


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_schema_names_the_fields_of_each_record(record):
    assert set(SCHEMA["definitions"][record.__name__]["properties"]) == {
        f.name for f in fields(record)
    }


@pytest.mark.parametrize("enum", (JobState, TaskState), ids=lambda e: e.__name__)
def test_schema_lists_every_state(enum):
    assert SCHEMA["definitions"][enum.__name__]["enum"] == [m.value for m in enum]


def test_records_as_the_am_and_server_send_them_match_the_schema():
    snap = snapshot()
    validator("JobSnapshot").validate(snap.to_json())
    validator("JobSummary").validate(JobSummary.of(snap).to_json())
    lost = JobSnapshot.lost("tony_2", {"name": "x"}, "the AM is gone")
    validator("JobSnapshot").validate(lost.to_json())
    stalled = replace(
        snap,
        stall=protocol.Stall(
            2.0,
            3.0,
            10.0,
            ("worker:0",),
            {"worker:0": "step 4"},
            "warn",
            (protocol.TaskStacks("worker:0", "Thread 0x1 (most recent call first):", None, 0.05),),
        ),
    )
    validator("JobSnapshot").validate(stalled.to_json())
    assert JobSnapshot.from_json(json.loads(json.dumps(stalled.to_json()))) == stalled
    summary = JobSummary.of(stalled).to_json()
    validator("JobSummary").validate(summary)
    assert summary["stalled_since"] == 2.0
    groups = grouped(protocol.StacksAnswer(1, stalled.stall.stacks), stalled.stall.behind)
    validator("StackGroups").validate(groups.to_json())
    assert groups.groups[0].behind and groups.seconds == {"worker:0": 0.05}
    waiting = replace(
        snap,
        waiting=protocol.QueueWait(
            "default",
            1.0,
            ("worker:1",),
            protocol.Amount(2048, 1, 0),
            used=protocol.Amount(6144, 8, 0),
            maximum=protocol.Amount(6144, 8, 0),
            user_limit=protocol.Amount(6144, 8, 0),
            apps_ahead=1,
            diagnostics="[Sat Nov 28] Scheduler has assigned a container for AM",
        ),
    )
    validator("JobSnapshot").validate(waiting.to_json())
    assert JobSnapshot.from_json(json.loads(json.dumps(waiting.to_json()))) == waiting


def test_schema_refuses_a_record_that_drifted():
    bad = dict(snapshot().to_json(), state="RUNING")
    with pytest.raises(jsonschema.ValidationError):
        validator("JobSnapshot").validate(bad)


def test_json_round_trip_gives_the_same_typed_record():
    snap = snapshot()
    again = JobSnapshot.from_json(json.loads(json.dumps(snap.to_json())))
    assert again == snap
    assert again.state is JobState.RUNNING and again.tasks[0].state is TaskState.RUNNING
    assert again.chief_task is again.tasks[0] and not again.terminal and not again.settled


def test_an_older_record_without_new_fields_still_loads():
    old = {
        "job_id": "tony_3",
        "state": "SUCCEEDED",
        "tasks": [
            {"id": "worker:0", "type": "worker", "index": 0, "tracked": True, "state": "SUCCEEDED"}
        ],
    }
    snap = JobSnapshot.from_json(old)
    assert snap.terminal and snap.settled and snap.schema_version == protocol.SCHEMA_VERSION


def test_executor_env_is_the_one_definition_of_the_tony_variables():
    env = ExecutorEnv(
        am_url="http://127.0.0.1:1",
        token="t",
        job_id="j",
        chief="worker:0",
        task_id="worker:1",
        attempt=2,
        session=True,
    ).to_env()
    assert env["TONY_TASK_ID"] == "worker:1" and env["TONY_SESSION"] == "1"
    assert "TONY_CONTAINER_ID" not in env  # None: not set
    back = ExecutorEnv.from_env(env)
    assert back.attempt == 2 and back.session is True and back.heartbeat_ms == 1000
    # The sidecar's limit without the AM: twice the AM's (8 x 1 s) unless set (am-lost-sec).
    assert back.am_lost_limit == 16.0
    longer = ExecutorEnv.from_env({**env, "TONY_AM_LOST_S": "600.0"})
    assert longer.am_lost_s == 600.0 and longer.am_lost_limit == 600.0


def test_an_event_keeps_its_flat_json_form():
    wire = {"seq": 3, "time": 1.5, "kind": "task", "task": "worker:0", "state": "RUNNING"}
    event = protocol.Event.from_json(wire)
    assert event.kind is protocol.EventKind.TASK and event.data["task"] == "worker:0"
    assert event.to_json() == wire


def test_a_cell_outcome_sends_only_what_it_has():
    assert protocol.CellOutcome("ok").to_json() == {"status": "ok"}  # no "value": none sent
    back = protocol.CellOutcome.from_json({"status": "error", "traceback": "Traceback ..."})
    assert not back.ok and back.traceback == "Traceback ..."


def test_a_task_id_is_made_and_read_in_one_place():
    from tony_jupyter.core.protocol import parse_task_id, task_id
    from tony_jupyter.core.spec import JobSpec, TaskSpec

    assert task_id("worker", 1) == "worker:1" and parse_task_id("worker:1") == ("worker", 1)
    assert parse_task_id(task_id("ps", "0")) == ("ps", 0) and parse_task_id("chief") == ("chief", 0)
    spec = JobSpec("j", (TaskSpec("worker", 2), TaskSpec("ps", 1)))
    assert spec.task_ids() == ["worker:0", "worker:1", "ps:0"] and spec.chief_id == "worker:0"
    only_ps = JobSpec("j", (TaskSpec("ps", 1),))
    assert only_ps.chief_id == "ps:0"
