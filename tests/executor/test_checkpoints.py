"""The YARN checkpoint mirror's ordering, against an in-memory stand-in for WebHDFS: HDFS must
always hold a whole checkpoint, whatever TensorFlow writes between a round's listing and its
reads."""

from pathlib import Path

from tony_jupyter.executor.checkpoints import CheckpointMirror


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
