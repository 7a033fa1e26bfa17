"""TonY users' configuration files load as they are: every key of TonY's tony-default.xml is
honoured or accepted (said once, with why), and a key TonY does not have is still an error."""

import pytest

from tony_jupyter import options
from tony_jupyter.core.errors import SpecError
from tony_jupyter.options import parse_job_args

# The keys of TonY's tony-default.xml (tony-core/src/main/resources) with their default values;
# None: the file gives the key no <value>.
TONY_DEFAULTS = {
    "tony.other.namenodes": None,
    "tony.yarn.queue": "default",
    "tony.application.name": "TensorFlowApplication",
    "tony.application.type": "TONY",
    "tony.application.tags": "",
    "tony.application.node-label": None,
    "tony.application.enable-preprocess": "false",
    "tony.application.timeout": "0",
    "tony.application.framework": "tensorflow",
    "tony.application.num-client-rm-connect-retries": "3",
    "tony.application.distributed-mode": "GANG",
    "tony.task.max-total-instances": "-1",
    "tony.task.max-total-gpus": "-1",
    "tony.task.am.jvm.opts": "",
    "tony.task.executor.jvm.opts": "-Xmx1536m",
    "tony.task.heartbeat-interval-ms": "1000",
    "tony.task.max-missed-heartbeats": "25",
    "tony.task.metrics-interval-ms": "5000",
    "tony.task.gpu-metrics.enabled": "true",
    "tony.am.retry-count": "0",
    "tony.am.memory": "2g",
    "tony.am.vcores": "1",
    "tony.am.gpus": "0",
    "tony.am.wait-client-signal-stop-timeout-sec": "15",
    "tony.ps.memory": "2g",
    "tony.ps.vcores": "1",
    "tony.container.allocation.timeout": "-1",
    "tony.worker.timeout": "0",
    "tony.worker.memory": "2g",
    "tony.worker.vcores": "1",
    "tony.worker.gpus": "0",
    "tony.application.untracked.jobtypes": "ps",
    "tony.application.stop-on-failure-jobtypes": "ps",
    "tony.application.fail-on-worker-failure-enabled": "false",
    "tony.docker.enabled": "false",
    "tony.application.security.enabled": "true",
    "tony.application.hdfs-conf-path": None,
    "tony.application.yarn-conf-path": None,
    "tony.application.mapred-conf-path": None,
    "tony.portal.url": "https://localhost:19886",
    "tony.history.location": "/path/to/tony-history",
    "tony.history.intermediate": "/path/to/tony-history/intermediate",
    "tony.history.finished": "/path/to/tony-history/finished",
    "tony.history.mover-interval-ms": "300000",
    "tony.history.retention-sec": "2592000",
    "tony.history.purger-interval-ms": "21600000",
    "tony.history.finished-dir-timezone": "UTC",
    "tony.portal.cache.max-entries": "10000",
    "tony.keytab.user": "user1",
    "tony.keytab.location": "/location/to/tony.keytab",
    "tony.https.port": "19886",
    "tony.https.keystore.path": "/location/to/tony.jks",
    "tony.https.keystore.type": "JKS",
    "tony.https.keystore.password": "password",
    "tony.https.keystore.algorithm": "SunX509",
    "tony.http.port": "disabled",
    "tony.secret.key": "changeme",
    "tony.application.test.horovod-driver-fail-enable": "false",
    "tony.application.test.horovod-test-mode-enable": "false",
}


def xml(props: dict) -> str:
    body = "".join(
        f"<property><name>{k}</name>" + ("" if v is None else f"<value>{v}</value>") + "</property>"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?><configuration>{body}</configuration>'


@pytest.fixture(autouse=True)
def _fresh_notices(monkeypatch):
    monkeypatch.setattr(options, "_reported", set())


def test_tony_default_xml_loads_and_each_ignored_key_is_said_once(tmp_path, capsys):
    conf = tmp_path / "tony-default.xml"
    conf.write_text(xml(TONY_DEFAULTS))
    _, spec = parse_job_args(f"--conf-file {conf}")
    assert spec.name == "TensorFlowApplication" and spec.queue == "default"
    assert spec.max_missed_heartbeats == 25 and spec.am_linger_s == 15.0
    worker = next(t for t in spec.tasks if t.type == "worker")
    assert worker.memory_mb == 2048 and worker.gpus == 0
    said = capsys.readouterr().err
    assert "tony.history.location does not apply here (a TonY Portal" in said
    assert "tony.task.executor.jvm.opts does not apply here" in said
    assert "tony.application.security.enabled" not in said  # what it asks for happens anyway
    assert said.count("tony.portal.url") == 1
    parse_job_args(f"--conf-file {conf}")
    assert capsys.readouterr().err == ""  # once per key, not once per cell


def test_an_older_releases_spelling_loads_too(capsys):
    parse_job_args("--conf tony.application.stop.on.failure.jobtypes=ps")
    assert capsys.readouterr().err == ""  # ps: what tony-jupyter does anyway


def test_tony_readme_configuration_as_written(tmp_path):
    conf = tmp_path / "tony.xml"
    conf.write_text(
        xml(
            {
                "tony.worker.instances": "4",
                "tony.worker.memory": "4g",
                "tony.worker.gpus": "1",
                "tony.ps.memory": "3g",
                "tony.application.security.enabled": "false",
            }
        )
    )
    _, spec = parse_job_args(f"--conf-file {conf}")
    counts = {t.type: t.instances for t in spec.tasks}
    assert counts == {"worker": 4}
    assert next(t for t in spec.tasks if t.type == "worker").memory_mb == 4096


def test_limits_tony_has_are_enforced():
    with pytest.raises(SpecError, match="asks for 4 tasks in all, above tony.task.max-total"):
        parse_job_args("--workers 4 --conf tony.task.max-total-instances=3")
    with pytest.raises(SpecError, match="asks for 2 GPUs in all, above tony.task.max-total-gpus=1"):
        parse_job_args("--workers 2 --gpus 1 --conf tony.task.max-total-gpus=1")


def test_a_framework_this_version_cannot_run_is_refused():
    with pytest.raises(SpecError, match="runs tensorflow, pytorch, jax jobs .MXNet is retired"):
        parse_job_args("--conf tony.application.framework=mxnet")
    with pytest.raises(SpecError, match="Horovod has had no release since 2023"):
        parse_job_args("--framework horovod")
    with pytest.raises(SpecError, match="runs tensorflow, pytorch, jax jobs$"):
        parse_job_args("--framework caffe")


def test_the_framework_comes_from_tonys_key_or_the_flag():
    assert parse_job_args("--workers 2")[1].framework == "tensorflow"
    spec = parse_job_args("--conf tony.application.framework=PyTorch")[1]
    assert spec.framework == "pytorch"
    # the flag wins over --conf, as every flag does
    assert (
        parse_job_args("--conf tony.application.framework=pytorch --framework jax")[1].framework
        == "jax"
    )


def test_a_key_tony_does_not_have_is_still_an_error():
    with pytest.raises(SpecError, match="did you mean tony.history.location"):
        parse_job_args("--conf tony.history.locaton=/x")
    with pytest.raises(SpecError, match="unknown configuration key 'tony.nope.nope.nope'"):
        parse_job_args("--conf tony.nope.nope.nope=1")
