"""A new job's record, made in one place for both backends (JobRecord.create), and a YARN
job's yarn.json as a typed record (YarnInfo), made by Cluster.job_info only."""

from __future__ import annotations

import json
import stat

import pytest

from tony_jupyter.core import jobdir
from tony_jupyter.core.hadoopconf import Address, HadoopConf
from tony_jupyter.core.protocol import new_token, token_verifier
from tony_jupyter.core.spec import JobSpec, TaskSpec
from tony_jupyter.core.yarninfo import YarnInfo
from tony_jupyter.launcher.client import JobRecord, jobs_dir, token_store
from tony_jupyter.launcher.yarn.secure import Cluster


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_local_jobs_token_is_kept_out_of_its_directory(tmp_path):
    token = new_token()
    rec = JobRecord.create("tony_1", token, root=tmp_path)
    assert rec.dir == jobs_dir(tmp_path) / "tony_1" and _mode(rec.dir) == 0o700
    kept = token_store(rec.dir.parent) / "tony_1"
    assert kept.read_text() == token and _mode(kept) == 0o600
    assert not rec.layout.token.exists()
    assert rec.layout.token_verifier.read_text() == token_verifier(token)
    assert rec.token == token
    assert not rec.layout.spec.exists()  # the spec goes last: not a job yet
    rec.write_spec(JobSpec("j", (TaskSpec("worker", 1),)))
    assert jobdir.JobDir(rec.dir).holds_job()


def test_a_yarn_records_token_is_in_its_directory_at_0600(tmp_path):
    rec = JobRecord.create("application_1_0001", "t" * 43, root=tmp_path, token_in_dir=True)
    assert rec.layout.token.read_text() == "t" * 43 and _mode(rec.layout.token) == 0o600
    assert rec.token == "t" * 43


def test_a_record_that_cannot_be_made_leaves_nothing(tmp_path, monkeypatch):
    def refuse(self, token):
        raise OSError("disk full")

    monkeypatch.setattr(JobRecord, "write_token", refuse)
    with pytest.raises(OSError, match="disk full"):
        JobRecord.create("tony_2", "x", root=tmp_path)
    assert not (jobs_dir(tmp_path) / "tony_2").exists()


def test_tokens_are_minted_fresh_and_verified_by_their_sha256():
    a, b = new_token(), new_token()
    assert a != b and len(a) >= 43
    assert token_verifier(a) == token_verifier(a.encode()) != token_verifier(b)


def _cluster() -> Cluster:
    conf = HadoopConf(
        None,
        Address("http://rm1:8088;http://rm2:8088", "test"),
        Address("http://nn:9870", "test"),
        "hdfs://nn:8020",
        "alice",
        (),
    )

    class Staging:
        def job_dir(self, app_id: str) -> str:
            return f"/user/alice/.tony-jupyter/{app_id}"

    return Cluster(conf, rm=None, staging=Staging())  # type: ignore[arg-type]


def test_yarn_json_is_made_in_one_place_and_read_back_typed(tmp_path):
    info = _cluster().job_info("application_1_0002", submitted=5.0, warm=True)
    assert (info.rm_url, info.user, info.default_fs) == (
        "http://rm1:8088;http://rm2:8088",
        "alice",
        "hdfs://nn:8020",
    )
    assert info.staging == "/user/alice/.tony-jupyter/application_1_0002" and not info.secure
    rec = JobRecord.create(info.app_id, "t", root=tmp_path, token_in_dir=True)
    info.write(rec.layout.yarn_info)
    written = json.loads(rec.layout.yarn_info.read_text())
    assert "am_url" not in written and "pack_env" not in written and written["warm"] is True
    assert rec.yarn() == info
    up = info.am_started("http://node1:4141")
    up.write(rec.layout.yarn_info)
    assert rec.yarn().am_url == "http://node1:4141" and rec.yarn().am_up


def test_a_damaged_yarn_json_is_named_not_trusted(tmp_path):
    rec = JobRecord.create("application_1_0003", "t", root=tmp_path, token_in_dir=True)
    rec.layout.yarn_info.write_text(json.dumps({"app_id": "application_1_0003", "rm_url": 7}))
    assert rec.yarn() is None
    assert "yarn.json" in rec.damage_note() and "rm_url" in rec.damaged["yarn.json"]
    assert YarnInfo.read(tmp_path / "none.json") is None
