"""A cached archive on HDFS (a --pack-env archive, a shipped directory) is used only while it is
what this host uploaded (issue 42, finding 5; launcher/yarn/uploads.py): its length and
modification time as HDFS gave them after the upload, and its HDFS checksum. Anything else (a
task that overwrote it with the user's credentials, another host's upload, a record lost) is
uploaded again, and the replacement said. A fake HDFS client here; the devcluster's real one in
tests/yarn/test_yarn_cache_replaced.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tony_jupyter.core.hadoopconf import Address
from tony_jupyter.launcher.yarn import staging as staging_mod
from tony_jupyter.launcher.yarn import uploads
from tony_jupyter.launcher.yarn.staging import Staging


class FakeHdfs:
    """HdfsCLI's Client as staging.py calls it, over a dict; its clock moves on every write."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.mtimes: dict[str, int] = {}
        self.clock = 1_000_000
        self.uploads = 0

    def _write(self, path: str, data: bytes) -> None:
        self.clock += 1000
        self.files[path], self.mtimes[path] = data, self.clock

    def status(self, path: str, strict: bool = True):
        if path not in self.files:
            if strict:
                raise AssertionError(f"no {path}")
            return None
        return {"length": len(self.files[path]), "modificationTime": self.mtimes[path]}

    def checksum(self, path: str) -> dict:
        digest = hashlib.md5(self.files[path]).hexdigest()
        return {"algorithm": "MD5-of-0MD5-of-512CRC32C", "bytes": digest, "length": 28}

    def makedirs(self, path: str, permission: str = "") -> None:
        pass

    def upload(self, path: str, local: str, permission: str = "") -> None:
        self.uploads += 1
        self._write(path, Path(local).read_bytes())

    def rename(self, src: str, dst: str) -> None:
        assert dst not in self.files
        self._write(dst, self.files.pop(src))
        self.mtimes[dst] = self.clock

    def delete(self, path: str, recursive: bool = False) -> bool:
        return self.files.pop(path, None) is not None

    def set_times(self, path: str, modification_time: int) -> None:
        self.mtimes[path] = modification_time


@pytest.fixture
def staging(tony_home) -> Staging:
    s = Staging.__new__(Staging)
    s.address = Address("http://nn:9870", "test")
    s.user, s.fs, s.root = "alice", "hdfs://nn:8020", "/user/alice/.tony-jupyter"
    s.client = FakeHdfs()  # type: ignore[assignment]
    return s


def archive(staging: Staging, content: bytes = b"the real env") -> tuple[dict, dict]:
    return staging._archive(staging_mod.ENVS, "abc123", lambda p: p.write_bytes(content), "PRIVATE")


def test_an_archive_this_host_uploaded_is_used_as_it_is(staging, capsys):
    entry, info = archive(staging)
    assert info["bytes_uploaded"] == len(b"the real env") and "replaced" not in info
    again, info = archive(staging)
    assert info["bytes_uploaded"] == 0 and again == entry and staging.client.uploads == 1
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("overwrite", "said"),
    [
        # a task writes its own archive over the cached one
        (lambda fs, p: fs._write(p, b"evil payload"), "was replaced: 12 bytes modified at"),
        # ...of the same length, and sets its modification time back (WebHDFS SETTIMES)
        (
            lambda fs, p: (t := fs.mtimes[p], fs._write(p, b"the evil env"), fs.set_times(p, t)),
            "its HDFS checksum is not the one it had",
        ),
    ],
)
def test_an_archive_replaced_since_is_uploaded_again_and_said(staging, capsys, overwrite, said):
    archive(staging)
    path = "/user/alice/.tony-jupyter/envs/abc123.tar.gz"
    overwrite(staging.client, path)
    entry, info = archive(staging)
    err = capsys.readouterr().err
    assert said in err and f"the cached {path}" in err and "uploading it again" in err
    assert said in info["replaced"] and info["bytes_uploaded"] == len(b"the real env")
    assert staging.client.files[path] == b"the real env"  # ours again, and the job's entry:
    assert entry["timestamp"] == staging.client.mtimes[path] and entry["size"] == 12
    assert archive(staging)[1]["bytes_uploaded"] == 0  # and used as it is after that


def test_an_archive_without_a_record_here_is_uploaded_again(staging, capsys):
    archive(staging)
    uploads._path().unlink()  # another host's upload, or one from before the record existed
    _, info = archive(staging)
    assert "not one this host uploaded" in info["replaced"] and staging.client.uploads == 2
    assert "uploading it again" in capsys.readouterr().err


def test_a_damaged_record_is_no_record(tony_home):
    uploads._path().parent.mkdir(parents=True, exist_ok=True)
    uploads._path().write_text('{"k": {"length": "x"}, "j": [1]}')
    assert uploads.recorded("k") is None and uploads.recorded("j") is None
    uploads.record("k", uploads.Upload(1, 2, None))
    assert uploads.recorded("k") == uploads.Upload(1, 2, None)
    assert oct(uploads._path().stat().st_mode & 0o777) == "0o600"


def test_an_interpreter_packed_once_is_not_packed_again_for_an_emptied_cache(
    staging, tmp_path, monkeypatch
):
    """The interpreter's archive is kept on this host too (envcache.py's ``pythons``): a job
    after the cluster's cache was cleared, or on another cluster, copies it, packing nothing."""
    from tony_jupyter.launcher.yarn import envcache, interpreter

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prefix = tmp_path / "py"
    (prefix / "lib" / "python3.11").mkdir(parents=True)
    (prefix / "lib" / "python3.11" / "os.py").write_text("# the landmark\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "python3.11").write_bytes(b"\x7fELF not really" * 1000)
    packed = []
    real_pack = interpreter.pack
    monkeypatch.setattr(interpreter, "pack", lambda p, out: packed.append(p) or real_pack(p, out))
    entry, first = staging.python_archive(prefix)
    assert packed == [prefix] and first["bytes_uploaded"] > 0 and "local_cache" not in first
    kept = envcache.directory(envcache.PYTHONS) / f"{first['hash']}.tar.gz"
    assert kept.is_file() and kept.stat().st_size == entry["size"]
    staging.client.files.clear()  # the cluster's cache cleared (or another cluster)
    again, second = staging.python_archive(prefix)
    assert packed == [prefix], "packed a second time"
    assert second["local_cache"] is True and second["bytes_uploaded"] == entry["size"]
    assert second["hash"] == first["hash"]
    # the venvs' archives are kept apart: an interpreter evicts none of them
    assert not envcache.directory(envcache.ENVS).exists()
