import json

import pytest

from tony_jupyter.core.errors import SpecError
from tony_jupyter.core.numbers import parse_memory
from tony_jupyter.core.spec import JobSpec, SpecBuilder
from tony_jupyter.options import parse_job_args


@pytest.mark.parametrize(
    "text,mb",
    [("2g", 2048), ("512m", 512), ("1024", 1024), ("1.5g", 1536), ("2GB", 2048), ("4Gi", 4096)],
)
def test_parse_memory(text, mb):
    assert parse_memory(text) == mb


@pytest.mark.parametrize("text", ["2x", "g", "", "-1g", "0"])
def test_parse_memory_rejects(text):
    with pytest.raises(SpecError, match="e.g. 512m or 2g"):
        parse_memory(text)


def test_flags_build_tasks_with_per_type_resources():
    _, spec = parse_job_args(
        "--workers 2 --ps 1 --chief --evaluator --memory 3g --vcores 2 --gpus 1 "
        "--conf tony.ps.memory=1g --conf tony.worker.vcores=4 --name demo"
    )
    assert [(t.type, t.instances) for t in spec.tasks] == [
        ("chief", 1),
        ("worker", 2),
        ("ps", 1),
        ("evaluator", 1),
    ]
    assert spec.task("ps").memory_mb == 1024 and spec.task("worker").memory_mb == 3072
    assert spec.task("worker").vcores == 4 and spec.task("chief").vcores == 2
    # --gpus is per training task: parameter servers and evaluators get none.
    assert spec.task("worker").gpus == 1 and spec.task("ps").gpus == 0
    assert spec.name == "demo" and spec.chief_id == "chief:0"
    # chief + ps: TF2 ParameterServerStrategy, where workers only serve.
    assert spec.untracked == ("ps", "worker")


def test_defaults_are_one_worker_on_local():
    _, spec = parse_job_args("")
    assert spec.task_ids() == ["worker:0"] and spec.backend == "local"
    assert spec.chief_id == "worker:0" and spec.untracked == ("ps",)


def test_json_round_trip():
    _, spec = parse_job_args("--workers 3 --ps 2 --pull a,b --conf tony.containers.envs=A=1,B=2")
    again = JobSpec.from_json(spec.to_json(), json.loads(spec.env_json()))
    assert again == spec and again.env == (("A", "1"), ("B", "2"))


def test_schema_version_mismatch_is_named():
    _, spec = parse_job_args("")
    text = spec.to_json().replace('"schema_version": 2', '"schema_version": 99')
    with pytest.raises(SpecError, match="different tony-jupyter versions"):
        JobSpec.from_json(text)


def test_tony_keys_carry_over():
    b = SpecBuilder()
    for k, v in {
        "tony.worker.instances": "3",
        "tony.application.num-retries": "2",
        "tony.application.timeout": "60000",
        "tony.yarn.queue": "gpu",
        "tony.task.heartbeat-interval-ms": "500",
        "tony.task.max-missed-heartbeats": "4",
        "tony.worker.node-label": "gpu",
        "tony.application.untracked.jobtypes": "ps,x",
    }.items():
        b.apply_conf(k, v)
    spec = b.build()
    assert spec.task("worker").instances == 3 and spec.max_attempts == 3
    assert spec.timeout_s == 60 and spec.queue == "gpu" and spec.heartbeat_interval_ms == 500
    assert spec.max_missed_heartbeats == 4 and spec.task("worker").node_label == "gpu"
    assert spec.untracked == ("ps", "x")


def test_the_lost_host_keys_of_our_own():
    _, spec = parse_job_args("--workers 1")
    assert spec.exclusion_wait_s == 30 and spec.am_lost_s == 0  # defaults: exclusion on, 2x
    line = "--conf tony.task.exclusion-wait-sec=0 --conf tony.task.am-lost-sec=600"
    _, spec = parse_job_args(f"--workers 1 {line}")
    assert spec.exclusion_wait_s == 0 and spec.am_lost_s == 600
    with pytest.raises(SpecError, match="tony.task.am-lost-sec: expected a whole number"):
        parse_job_args("--workers 1 --conf tony.task.am-lost-sec=soon")


def test_conf_file_in_tony_xml_format(tmp_path):
    xml = tmp_path / "tony.xml"
    xml.write_text("""<?xml version="1.0"?><configuration>
      <property><name>tony.worker.instances</name><value>2</value></property>
      <property><name>tony.ps.instances</name><value>1</value></property>
      <property><name>tony.ps.memory</name><value>768m</value></property>
    </configuration>""")
    _, spec = parse_job_args(f"--conf-file {xml}")
    assert spec.task("worker").instances == 2 and spec.task("ps").memory_mb == 768
    _, spec = parse_job_args(f"--conf-file {xml} --workers 4")  # flags win over the file
    assert spec.task("worker").instances == 4


@pytest.mark.parametrize(
    "line,message",
    [
        ("--wrokers 2", "unrecognized arguments: --wrokers 2; `%tony help` lists the flags"),
        ("--workers 0", "--workers 0: a job needs at least one worker"),
        ("--workers -1", "--workers: must be at least 0, got -1"),
        ("--workers two", "--workers: expected a whole number (digits 0-9), got 'two'"),
        ("--memory 2x", "malformed size '2x'"),
        ("--conf tony.wroker.instances=2", "did you mean tony.worker.instances?"),
        ("--conf tony.application.timeot=5", "did you mean tony.application.timeout?"),
        ("--conf tony.worker.memory", "expected KEY=VALUE"),
        ("--conf tony.worker.memory=lots", "malformed size 'lots'"),
        ("--max-attempts 0", "--max-attempts must be at least 1"),
        ("--pull 'a b'", "is not a Python name"),
        ("--conf-file /nonexistent/tony.xml", "no such file"),
        ("--conf tony.application.untracked.jobtypes=worker", "every task type is untracked"),
    ],
)
def test_bad_flags_name_the_problem(line, message):
    with pytest.raises(SpecError) as e:
        parse_job_args(line)
    assert message in str(e.value)


def test_malformed_conf_file(tmp_path):
    bad = tmp_path / "tony.xml"
    bad.write_text("<configuration><property>")
    with pytest.raises(SpecError, match="not valid XML"):
        parse_job_args(f"--conf-file {bad}")


def test_every_row_of_the_settings_table_reads_into_its_fields_type():
    """settings.py is the one table: each row that sets a JobSpec field names one, a key's
    value lands there in the field's own type, and a value of another type is refused."""
    import dataclasses

    from tony_jupyter.core.settings import HOWS, KINDS, SCOPES, SETTINGS
    from tony_jupyter.core.spec import FIELD_TYPES, JobSpec, TaskSpec

    task_fields = {f.name for f in dataclasses.fields(TaskSpec)}
    for s in SETTINGS:
        assert s.kind in KINDS and s.scope in SCOPES and s.help.strip(), s
        assert s.how in HOWS or s.how == "special", s
        if s.scope == "job" and s.how in ("set", "plus_one", "registration"):
            assert s.field in FIELD_TYPES, s
        if s.scope == "task" and s.field:
            assert s.field in task_fields, s
    b = SpecBuilder()
    b.apply_conf("tony.application.timeout", "1500")
    b.apply_conf("tony.task.heartbeat-interval-ms", "250")
    b.apply_conf("tony.am.linger-sec", "5")
    b.apply_conf("tony.application.num-retries", "2")
    b.instances["worker"] = 1
    spec = b.build()
    assert (spec.timeout_s, spec.heartbeat_interval_ms, spec.am_linger_s) == (1.5, 250, 5.0)
    assert type(spec.am_linger_s) is float and type(spec.heartbeat_interval_ms) is int
    assert spec.max_attempts == 3
    assert JobSpec.heartbeat_interval_ms == 1000 and JobSpec.max_missed_heartbeats == 8
    with pytest.raises(TypeError, match="JobSpec.max_attempts takes int"):
        SpecBuilder().set("max_attempts", "3")
    with pytest.raises(KeyError):
        SpecBuilder().set("no_such_field", 1)


def test_the_heartbeat_defaults_are_written_once():
    from tony_jupyter.core.protocol import ExecutorEnv
    from tony_jupyter.core.settings import HEARTBEAT_INTERVAL_MS, MAX_MISSED_HEARTBEATS
    from tony_jupyter.core.spec import JobSpec

    assert ExecutorEnv(am_url="x").heartbeat_ms == JobSpec.heartbeat_interval_ms
    assert ExecutorEnv(am_url="x").max_missed == JobSpec.max_missed_heartbeats
    assert (HEARTBEAT_INTERVAL_MS, MAX_MISSED_HEARTBEATS) == (1000, 8)


def test_the_session_flags_come_from_the_table_and_leave_the_job_flags():
    from tony_jupyter.options import session_flags

    words = ["--workers", "2", "--idle-timeout", "5", "--name", "x", "--detach"]
    assert session_flags(words) == ("--workers 2 --name x", 5.0, True)
    assert session_flags(["--idle-timeout=7"]) == ("", 7.0, False)
    with pytest.raises(SpecError, match="--idle-timeout"):
        session_flags(["--idle-timeout", "-1"])
    with pytest.raises(SpecError, match="--idle-timeout"):
        session_flags(["--workers", "1", "--idle-timeout"])
