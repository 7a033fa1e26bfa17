"""The YARN checkpoint mirror's ordering, against an in-memory stand-in for WebHDFS: HDFS must
always hold a whole checkpoint, whatever TensorFlow writes between a round's listing and its
reads."""

import posixpath
from pathlib import Path

import pytest

from tony_jupyter.executor.checkpoints import FENCE, CheckpointMirror, Fenced


class FakeHdfs:
    def __init__(self):
        self.files: dict[str, bytes] = {}

    def write(self, path, data, overwrite):
        self.files[path] = data

    def delete(self, path):
        self.files.pop(path, None)

    def rename(self, src, dest):  # WebHDFS RENAME: refused when dest exists (deleted first)
        assert dest not in self.files, dest
        self.files[dest] = self.files.pop(src)


def mirror(tmp_path: Path) -> tuple[CheckpointMirror, FakeHdfs]:
    m = CheckpointMirror.__new__(CheckpointMirror)
    m.local, m.remote, m.sent, m.named = tmp_path, "/stage/checkpoints", {}, {}
    m.client = FakeHdfs()
    return m, m.client


def save(d: Path, n: int) -> None:
    """What tf.train.CheckpointManager(max_to_keep=1) leaves after save number n."""
    (d / "chief").mkdir(exist_ok=True)
    for old in d.glob(f"chief/ckpt-{n - 1}.*"):
        old.unlink()
    (d / f"chief/ckpt-{n}.data-00000-of-00001").write_bytes(b"w" * n)
    (d / f"chief/ckpt-{n}.index").write_bytes(b"i")
    (d / "chief/checkpoint").write_text(
        f'model_checkpoint_path: "ckpt-{n}"\nall_model_checkpoint_paths: "ckpt-{n}"\n'
    )


def whole(hdfs: FakeHdfs) -> bool:
    index = hdfs.files.get("/stage/checkpoints/chief/checkpoint", b"").decode()
    if not index:
        return True
    name = index.split('"')[1]
    return {
        f"/stage/checkpoints/chief/{name}.index",
        f"/stage/checkpoints/chief/{name}.data-00000-of-00001",
    } <= set(hdfs.files)


def test_mirror_uploads_new_checkpoints_and_deletes_old_ones(tmp_path):
    m, hdfs = mirror(tmp_path)
    (tmp_path / "workertemp_1").mkdir()
    (tmp_path / "workertemp_1" / "x").write_bytes(b"temp")
    for n in (1, 2, 3):
        save(tmp_path, n)
        m.sync()
        assert whole(hdfs)
    assert sorted(hdfs.files) == [
        "/stage/checkpoints/chief/checkpoint",
        "/stage/checkpoints/chief/ckpt-3.data-00000-of-00001",
        "/stage/checkpoints/chief/ckpt-3.index",
    ]


def test_saves_during_every_round_still_leave_a_whole_checkpoint(tmp_path):
    """TensorFlow saves between a round's index read and its listing, every round."""
    m, hdfs = mirror(tmp_path)
    save(tmp_path, 1)
    listing, n = m._local_files, [1]

    def saving_meanwhile():
        if saving_meanwhile.calls % 2 == 1:  # the round's second listing: after the indexes
            n[0] += 1
            save(tmp_path, n[0])
        saving_meanwhile.calls += 1
        return listing()

    saving_meanwhile.calls = 0
    m._local_files = saving_meanwhile
    for _ in range(4):
        m.sync()
        assert whole(hdfs)
        assert b"ckpt-" in hdfs.files["/stage/checkpoints/chief/checkpoint"]
    m._local_files = listing
    m.sync()
    m.sync()
    assert (
        whole(hdfs)
        and f'"ckpt-{n[0]}"'.encode() in hdfs.files["/stage/checkpoints/chief/checkpoint"]
    )
    assert len(hdfs.files) == 3  # the old checkpoints are gone once nothing names them


class FencedHdfs(FakeHdfs):
    """With what the fence reads (GETFILESTATUS) and what restore reads."""

    def status(self, path, strict=True):
        if path in self.files:
            return {"type": "FILE", "length": len(self.files[path])}
        return {"type": "DIRECTORY"} if any(f.startswith(path + "/") for f in self.files) else None

    def walk(self, top):
        dirs: dict[str, list[str]] = {}
        for f in self.files:
            if f.startswith(top + "/"):
                dirs.setdefault(posixpath.dirname(f), []).append(posixpath.basename(f))
        for root, names in sorted(dirs.items()):
            yield root, [], names

    def read(self, path):
        import io

        return io.BytesIO(self.files[path])


def _attempt(tmp_path: Path, hdfs: FencedHdfs, attempt: int, name: str) -> CheckpointMirror:
    (tmp_path / name).mkdir()
    m = CheckpointMirror.__new__(CheckpointMirror)
    m.local, m.remote, m.sent, m.named = tmp_path / name, "/stage/checkpoints", {}, {}
    m.client, m.attempt = hdfs, attempt
    return m


def test_an_older_attempt_back_from_a_cut_link_is_fenced(tmp_path):
    hdfs = FencedHdfs()
    old = _attempt(tmp_path, hdfs, 1, "a1")
    old.claim()
    save(old.local, 1)
    old.sync()
    assert whole(hdfs) and len(hdfs.files[f"/stage/checkpoints/{FENCE}"]) == 1
    # Attempt 2 starts elsewhere while attempt 1's host is cut off: it restores, claims, saves.
    new = _attempt(tmp_path, hdfs, 2, "a2")
    assert new.restore() == 3  # the index and its checkpoint; never the fence
    assert not (new.local / FENCE).exists()
    new.claim()
    save(new.local, 2)
    new.sync()
    # The link comes back: attempt 1's chief saves again, and its next round writes nothing.
    save(old.local, 2)
    (old.local / "chief" / "ckpt-2.data-00000-of-00001").write_bytes(b"stale")
    before = dict(hdfs.files)
    with pytest.raises(Fenced, match="attempt 2 has started: this task of attempt 1"):
        old.sync()
    assert hdfs.files == before
    with pytest.raises(Fenced):
        old.claim()  # nor may it claim the directory back
    assert len(hdfs.files[f"/stage/checkpoints/{FENCE}"]) == 2
    save(new.local, 3)
    new.sync()  # the current attempt goes on writing
    assert whole(hdfs) and b"stale" not in hdfs.files.values()


def test_the_fence_is_read_only_in_a_round_that_writes(tmp_path):
    hdfs = FencedHdfs()
    m = _attempt(tmp_path, hdfs, 1, "a1")
    m.claim()
    reads = []
    hdfs.status = lambda path, strict=True: reads.append(path)  # type: ignore[method-assign]
    m.sync()
    m.sync()
    assert reads == []  # nothing changed: nothing read
    save(m.local, 1)
    m.sync()
    assert reads == [f"/stage/checkpoints/{FENCE}"]  # once for the round's three writes
