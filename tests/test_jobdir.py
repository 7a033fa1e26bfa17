"""A job directory's layout (jobdir.JobDir) and the AM's discovery record (aminfo.AmInfo).

The names are spelled out here on purpose: they are what older versions wrote, and a record
written by one must still be read, so a renamed file is a failing test, not a silent change."""

import json
import os
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from tony_jupyter.core import jobdir
from tony_jupyter.core.aminfo import AmInfo, AmInfoError
from tony_jupyter.core.jobdir import JobDir

# property -> the name on disk, as every version so far has written it
ON_DISK = {
    "spec": "spec.json",
    "env": "env.json",
    "status": "status.json",
    "history": "history.json",
    "events": "events.jsonl",
    "metrics": "metrics.json",
    "result": "result.json",
    "cell": "cell.py",
    "names": "names.pkl",
    "bundle": "bundle.json",
    "am_info": "am.json",
    "am_pid": "am.pid",
    "am_log": "am.log",
    "yarn_info": "yarn.json",
    "token": "token",
    "token_verifier": "token.sha256",
    "resources": "resources.json",
    "ca_bundle": "ca-bundle.pem",
    "src_archive": "src.tar.gz",
    "src": "src",
    "checkpoints": "checkpoints",
    "tensorboard": "tensorboard",
    "logs": "logs",
    "origin": "origin.json",
}


@pytest.mark.parametrize(("prop", "name"), sorted(ON_DISK.items()))
def test_each_file_has_its_name_of_old(prop, name, tmp_path):
    assert getattr(JobDir(tmp_path), prop) == tmp_path / name


def test_every_path_property_is_listed():
    props = {n for n, v in vars(JobDir).items() if isinstance(v, property)}
    assert props == set(ON_DISK)


def test_the_constants_are_the_names():
    # what must stay a string (YARN resource names, the history's FILES) takes these
    names = [getattr(jobdir, n) for n in dir(jobdir) if n.isupper()]
    consts = {v for v in names if isinstance(v, str)}
    assert consts == set(ON_DISK.values())


def test_log_paths(tmp_path):
    d = JobDir(tmp_path)
    assert d.attempt_logs(3) == tmp_path / "logs" / "attempt-3"
    assert d.log(2, "worker:10") == tmp_path / "logs" / "attempt-2" / "worker-10.log"
    assert d.stdout(1, "ps:0") == tmp_path / "logs" / "attempt-1" / "ps-0.stdout"
    assert jobdir.task_file("chief:0") == "chief-0"


def test_holds_job(tmp_path):
    d = JobDir(tmp_path)
    assert not d.holds_job()
    (tmp_path / "cell.py").write_text("1")  # staging begun, spec.json not yet written
    assert not d.holds_job()
    for name in ("history.json", "status.json", "spec.json"):  # any one of them
        (tmp_path / name).write_text("{}")
        assert d.holds_job()
        (tmp_path / name).unlink()


def test_frozen(tmp_path):
    with pytest.raises(FrozenInstanceError):
        JobDir(tmp_path).path = Path("/")  # type: ignore[misc]


def info() -> AmInfo:
    return AmInfo(
        url="http://127.0.0.1:4040",
        pid=os.getpid(),
        port=4040,
        started=1700000000.5,
        job_id="tony_20250101_120000_abcdef",
        backend="local",
    )


def test_am_info_round_trip(tmp_path):
    path = JobDir(tmp_path).am_info
    info().write(path)
    assert AmInfo.read(path) == info()
    assert not list(tmp_path.glob("*.tmp"))  # written beside, then renamed
    # the JSON form every reader of am.json has read (bench, tests, older clients)
    assert json.loads(path.read_text()) == {
        "url": "http://127.0.0.1:4040",
        "pid": os.getpid(),
        "port": 4040,
        "started": 1700000000.5,
        "job_id": "tony_20250101_120000_abcdef",
        "backend": "local",
    }


def test_am_info_missing_is_none(tmp_path):
    assert AmInfo.read(tmp_path / "am.json") is None


def test_am_info_of_an_older_am_reads(tmp_path):
    # an integer start time, and a key a newer AM may add: still a record
    path = tmp_path / "am.json"
    data = {**info().to_json(), "started": 1700000000, "extra": 1}
    path.write_text(json.dumps(data))
    assert AmInfo.read(path) == AmInfo(**{**info().to_json(), "started": 1700000000})


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "is empty"),
        ('{"url": "http://127.0.0.1:1", "pid"', "is not whole JSON"),
        ("[1, 2]", "not a AmInfo record but a JSON list"),
        ('{"pid": 12, "port": 1, "started": 0, "job_id": "j"}', "url"),
        (
            '{"url": "http://h:1", "pid": "12", "port": 1, "started": 0, "job_id": "j"}',
            "AmInfo.pid is '12', not a int",
        ),
        (
            '{"url": "http://h:1", "pid": 12, "port": true, "started": 0, "job_id": "j"}',
            "AmInfo.port is True, not a int",
        ),
    ],
)
def test_am_info_malformed_is_a_clear_error(tmp_path, text, why):
    path = tmp_path / "am.json"
    path.write_text(text)
    with pytest.raises(AmInfoError) as e:
        AmInfo.read(path)
    assert why in e.value.why
    assert str(path) in str(e.value)  # names the file
    assert "the job's AM writes when it serves" in str(e.value)


def test_am_info_a_directory_is_a_clear_error(tmp_path):
    (tmp_path / "am.json").mkdir()
    with pytest.raises(AmInfoError, match="cannot be read"):
        AmInfo.read(tmp_path / "am.json")


def test_local_client_notes_a_damaged_am_info(tony_home):
    """The client of a local job whose am.json is damaged: no AM to ask, the damage noted, the
    job shown from what its AM left (as for any damaged file of the record)."""
    from tony_jupyter.launcher.client import JobRecord, jobs_dir
    from tony_jupyter.launcher.local import LocalJobClient

    d = jobs_dir() / "j"
    d.mkdir()
    (d / "spec.json").write_text(json.dumps({"name": "j", "backend": "local"}))
    (d / "am.json").write_text('{"url": 5}')
    client = LocalJobClient(JobRecord("j", d))
    assert client.am_url() is None
    assert "AmInfo" in client.record.damaged["am.json"]
    assert "am.json" in client.snapshot().reason


def test_bundle_info_round_trip(tmp_path):
    from tony_jupyter.core.bundle import BundleInfo

    path = JobDir(tmp_path).bundle
    full = BundleInfo(
        filename="/home/u/train.py",
        pull=("model",),
        pushed=("lr", "data"),
        shards={"readers": ["worker:0"], "names": {}},
        src={"rel": "nb", "hash": "ab", "files": 2, "bytes": 10},
        argv=("train.py", "--epochs", "2"),
    )
    path.write_text(full.dumps())
    assert BundleInfo.read(path) == full
    # nothing that is not there is written (the form every launcher has written)
    path.write_text(BundleInfo(pull=("x",)).dumps())
    assert json.loads(path.read_text()) == {"filename": "<tony-cell>", "pull": ["x"], "pushed": []}
    # an older or a template's bundle.json: the defaults
    path.write_text("{}")
    assert BundleInfo.read(path) == BundleInfo()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "Expecting"),
        ('{"filename": 3}', "BundleInfo.filename is 3, not a str"),
        ("[]", "JSON list"),
    ],
)
def test_bundle_info_malformed_is_a_clear_error(tmp_path, text, why):
    from tony_jupyter.core.bundle import BundleInfo

    path = JobDir(tmp_path).bundle
    path.write_text(text)
    with pytest.raises(ValueError, match="submit it again") as e:
        BundleInfo.read(path)
    assert why in str(e.value) and str(path) in str(e.value)
