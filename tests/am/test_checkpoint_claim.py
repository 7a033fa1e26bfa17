"""The YARN AM claims a job's HDFS checkpoints for each attempt as it launches it (no JVM here:
the provider's rule, with a recording stand-in for Hadoop's FileSystem). The claim itself, the
fence an older chief reads, is tested in tests/executor/test_checkpoints.py; the AM's write on
the devcluster in tests/yarn/test_yarn_fault_tolerance.py and tests/hosts/test_hosts_faults.py."""

from __future__ import annotations

import threading

from tony_jupyter.am.yarn.provider import YarnProvider
from tony_jupyter.core import jobdir
from tony_jupyter.core.protocol import CHECKPOINT_FENCE

STAGING = "hdfs://nn:8020/user/u/.tony-jupyter/application_1_0001"


class _Now:
    """A pool that runs what it is given at once."""

    def submit(self, fn, *args):
        fn(*args)


class _Out:
    def __init__(self, files: dict, path: str):
        self.files, self.path = files, path

    def writeBytes(self, text: str) -> None:
        self.files[self.path] = self.files.get(self.path, "") + text

    def close(self) -> None:
        pass


class _FS:
    def __init__(self, files: dict, fail: bool = False):
        self.files, self.fail = files, fail

    def create(self, path, overwrite: bool) -> _Out:
        assert overwrite
        if self.fail:
            raise RuntimeError("java.net.ConnectException: Connection refused")
        self.files[path.name] = ""
        return _Out(self.files, path.name)


class _J:
    def __init__(self, fs: _FS):
        fs_of = fs

        class Path:
            def __init__(self, name: str):
                self.name = name

            def getFileSystem(self, conf):
                return fs_of

        self.Path = Path


def _provider(files: dict, elastic: bool = False, fail: bool = False) -> YarnProvider:
    yarn = YarnProvider.__new__(YarnProvider)
    yarn.J, yarn.conf, yarn.staging = _J(_FS(files, fail)), None, STAGING
    yarn.lock, yarn.pool = threading.RLock(), _Now()
    yarn.fence_checkpoints, yarn.fenced = not elastic, 1
    return yarn


FENCE = f"{STAGING}/{jobdir.CHECKPOINTS}/{CHECKPOINT_FENCE}"


def test_a_later_attempt_claims_the_checkpoints_once_as_it_launches():
    files: dict = {}
    yarn = _provider(files)
    yarn.claim_checkpoints(1)
    assert files == {}  # the first attempt's chief claims them itself
    for _ in range(3):  # attempt 2's three tasks: one write
        yarn.claim_checkpoints(2)
    assert files == {FENCE: "##"}  # attempt N: N bytes, as the executor's fence reads them
    yarn.claim_checkpoints(2)
    yarn.claim_checkpoints(3)
    assert files == {FENCE: "###"}


def test_an_elastic_job_or_a_failed_write_claims_nothing_and_fails_nothing(caplog):
    files: dict = {}
    _provider(files, elastic=True).claim_checkpoints(2)
    assert files == {}
    yarn = _provider(files, fail=True)
    yarn.claim_checkpoints(2)
    assert files == {}
    assert "could not claim the checkpoints for attempt 2" in caplog.text
