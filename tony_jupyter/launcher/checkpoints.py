"""``checkpoint_dir()`` on YARN: a container-local directory mirrored to the job's HDFS staging
directory (``<staging>/checkpoints/``, through WebHDFS), so it survives attempts and AM restarts.

Every task restores it before the user code starts: tf-keras' ``BackupAndRestore`` under
MultiWorkerMirroredStrategy restores every worker from ``<dir>/chief``. Only the chief saves
it back: the other workers write to ``<dir>/workertemp_<id>`` and delete it again (tf-keras'
``distributed_file_utils.write_dirpath``), so theirs is never the one to keep. Locally the
directory is shared by every task and needs none of this.
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
from pathlib import Path

SYNC_S = 0.5
SKIP_PREFIX = "workertemp_"


class CheckpointMirror:
    def __init__(self, local: Path, remote: str, webhdfs: str, user: str):
        from hdfs import InsecureClient

        self.local, self.remote = local, remote.rstrip("/")
        self.client = InsecureClient(webhdfs, user=user, timeout=30)
        self.sent: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime_ns) uploaded
        self.named: dict[str, str] = {}  # uploaded index -> the checkpoint prefix it names
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0

    def restore(self) -> int:
        """Download what earlier attempts saved; the number of files."""
        self.local.mkdir(parents=True, exist_ok=True)
        if self.client.status(self.remote, strict=False) is None:
            return 0
        count = 0
        for root, _, names in self.client.walk(self.remote):
            for name in names:
                rel = posixpath.relpath(posixpath.join(root, name), self.remote)
                dest = self.local / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with self.client.read(posixpath.join(root, name)) as r:
                    dest.write_bytes(r.read())
                st = dest.stat()
                self.sent[rel] = (st.st_size, st.st_mtime_ns)
                count += 1
        return count

    def _local_files(self) -> dict[str, tuple[int, int]]:
        out = {}
        for root, dirs, names in os.walk(self.local):
            dirs[:] = [d for d in dirs if not d.startswith(SKIP_PREFIX)]
            for name in names:
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue  # a temp file TensorFlow just renamed
                out[os.path.relpath(path, self.local)] = (st.st_size, st.st_mtime_ns)
        return out

    def sync(self) -> int:
        """Upload what changed, then delete what is gone; the number of files changed.

        TensorFlow's ``checkpoint`` index names the newest checkpoint, and is written after the
        data it names. Each round reads the indexes first, then lists and uploads the data, then
        uploads those index snapshots, but only when the files they name are on HDFS; old
        checkpoints are deleted last. So HDFS always holds a whole checkpoint, however a round
        interleaves with TensorFlow's writes and wherever the chief is killed."""
        indexes = {}
        for rel in self._local_files():
            if posixpath.basename(rel) == "checkpoint":
                indexes[rel] = self._read(rel)
        current = self._local_files()
        changed = sorted(
            rel
            for rel, st in current.items()
            if self.sent.get(rel) != st and posixpath.basename(rel) != "checkpoint"
        )
        for rel in changed:
            try:
                data = (self.local / rel).read_bytes()
            except FileNotFoundError:
                continue  # renamed or deleted since the listing: next round sees it
            self.client.write(f"{self.remote}/{rel}", data=data, overwrite=True)
            self.sent[rel] = current[rel]
        for rel, snapshot in indexes.items():
            # The index as read before the listing, else as it is now: the first whose
            # checkpoint is on HDFS (a save may have replaced the one it named meanwhile).
            for st, data in (snapshot, self._read(rel)):
                if self.sent.get(rel) == st or not data:
                    break
                prefix = self._named(rel, data.decode("utf-8", errors="replace"))
                if prefix and not self._uploaded(prefix):
                    continue
                self.client.write(f"{self.remote}/{rel}", data=data, overwrite=True)
                self.sent[rel] = st
                self.named[rel] = prefix
                changed.append(rel)
                break
        # Never delete an index, nor what an index on HDFS still names (the job's end deletes
        # the whole staging directory).
        keep = tuple(p + "." for p in self.named.values() if p)
        gone = [
            rel
            for rel in self.sent
            if rel not in current
            and posixpath.basename(rel) != "checkpoint"
            and not rel.startswith(keep or "\0")
        ]
        for rel in gone:
            self.client.delete(f"{self.remote}/{rel}")
            del self.sent[rel]
        return len(changed) + len(gone)

    def _read(self, rel: str) -> tuple[tuple[int, int], bytes]:
        try:
            st = os.stat(self.local / rel)
            return (st.st_size, st.st_mtime_ns), (self.local / rel).read_bytes()
        except FileNotFoundError:
            return (0, 0), b""

    def _uploaded(self, prefix: str) -> bool:
        """The checkpoint's files are on HDFS as they are now (not read mid-write)."""
        have = [r for r in self.sent if r.startswith(prefix + ".")]
        for rel in have:
            try:
                st = os.stat(self.local / rel)
            except FileNotFoundError:
                return False
            if (st.st_size, st.st_mtime_ns) != self.sent[rel]:
                return False
        return prefix + ".index" in have and any(r.startswith(prefix + ".data-") for r in have)

    def _named(self, index_rel: str, text: str) -> str:
        """The checkpoint a TensorFlow ``checkpoint`` index names, relative to the mirror."""
        m = re.search(r'^model_checkpoint_path: "(.*)"$', text, re.MULTILINE)
        if not m:
            return ""
        prefix = m.group(1)
        if os.path.isabs(prefix):
            return os.path.relpath(prefix, self.local)
        return posixpath.normpath(posixpath.join(posixpath.dirname(index_rel), prefix))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="checkpoint-sync", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SYNC_S):
            try:
                self.sync()
            except Exception as e:  # noqa: BLE001 - retried next round; training goes on
                self.errors += 1
                if self.errors in (1, 10, 100):
                    print(f"[tony] checkpoint sync to HDFS failed ({self.errors}x): {e}")

    def close(self) -> None:
        """Stop the background sync and save the last state."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            self.sync()


def from_env(is_chief: bool) -> CheckpointMirror | None:
    """The mirror a YARN executor uses (TONY_CHECKPOINT_REMOTE set), else None. Points
    TONY_CHECKPOINT_DIR, which checkpoint_dir() returns, at the container-local copy."""
    remote = os.environ.get("TONY_CHECKPOINT_REMOTE")
    if not remote:
        return None
    local = Path(os.environ.get("TONY_BUNDLE_DIR", ".")).resolve() / "checkpoints"
    os.environ["TONY_CHECKPOINT_DIR"] = str(local)
    user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER", "")
    mirror = CheckpointMirror(local, remote, os.environ["TONY_WEBHDFS_URL"], user)
    restored = mirror.restore()
    if restored:
        newest = sorted(
            f"{rel}: {mirror._named(rel, (local / rel).read_text(errors='replace'))}"
            for rel in mirror.sent
            if posixpath.basename(rel) == "checkpoint"
        )
        print(
            f"[tony] restored {restored} checkpoint files from hdfs {remote} "
            f"(newest: {', '.join(newest) or 'no TensorFlow index'})",
            flush=True,
        )
    if is_chief:
        mirror.start()
    return mirror
