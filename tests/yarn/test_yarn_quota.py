"""A checkpoint write that hits an HDFS space quota (set on a directory of the test's own on
the devcluster, then removed): it fails with a message naming the path, the quota and the
fix, and the checkpoint HDFS held before is whole for the next attempt to restore."""

import getpass
import secrets

import pytest
import requests

from tony_jupyter.core import quota
from tony_jupyter.executor.checkpoints import CheckpointMirror

pytestmark = pytest.mark.yarn


@pytest.fixture
def quota_dir(yarn_cluster):
    webhdfs = yarn_cluster.env()["TONY_DEVCLUSTER_WEBHDFS_URL"]
    path = f"/user/{getpass.getuser()}/tony-quota-test-{secrets.token_hex(3)}"

    def op(name, method="PUT", **params):
        r = requests.request(
            method,
            f"{webhdfs}/webhdfs/v1{path}",
            params={"op": name, "user.name": getpass.getuser(), **params},
            timeout=30,
        )
        r.raise_for_status()
        return r

    op("MKDIRS")
    yield webhdfs, path, op
    op("SETQUOTA", namespacequota=-1, storagespacequota=-1)  # cleared, then removed
    op("DELETE", method="DELETE", recursive="true")


def test_a_checkpoint_write_over_an_hdfs_space_quota_is_worded_and_corrupts_nothing(
    quota_dir, tmp_path
):
    webhdfs, remote, op = quota_dir
    local = tmp_path / "ckpt"
    local.mkdir()
    (local / "weights.bin").write_bytes(b"first" * 100)
    mirror = CheckpointMirror(local, remote, webhdfs, getpass.getuser())
    assert mirror.sync() == 1  # no quota yet: uploaded
    op("SETQUOTA", namespacequota=-1, storagespacequota=1 << 20)  # below one block
    (local / "weights.bin").write_bytes(b"second" * 100)
    with pytest.raises(quota.QuotaError) as got:
        mirror.sync()
    msg = str(got.value)
    assert f"{remote}/weights.bin" in msg and "space quota" in msg and "1 MB" in msg
    assert f"hdfs dfsadmin -setSpaceQuota <bytes> {remote}" in msg
    # the next attempt restores the checkpoint as it was, and no half-written file
    op("SETQUOTA", namespacequota=-1, storagespacequota=-1)
    again = tmp_path / "next-attempt"
    restored = CheckpointMirror(again, remote, webhdfs, getpass.getuser())
    assert restored.restore() == 1
    assert (again / "weights.bin").read_bytes() == b"first" * 100
    assert sorted(p.name for p in again.iterdir()) == ["weights.bin"]
