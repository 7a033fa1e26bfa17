"""``checkpoint_dir()`` on YARN: a container-local directory mirrored to the job's HDFS staging
directory (``<staging>/checkpoints/``, through WebHDFS), so it survives attempts and AM restarts.

Every task restores it before the user code starts: tf-keras' ``BackupAndRestore`` under
MultiWorkerMirroredStrategy restores every worker from ``<dir>/chief``. Only the chief saves
it back (in an elastic PyTorch job, each rendezvous round's rank 0: ``for_round``): the
other workers write to ``<dir>/workertemp_<id>`` and delete it again (tf-keras'
``distributed_file_utils.write_dirpath``), so theirs is never the one to keep. Locally the
directory is shared by every task and needs none of this.
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
from pathlib import Path

from ..core import jobdir, quota, tokens
from ..core.protocol import CHECKPOINT_FENCE, ExecutorEnv

V = ExecutorEnv.var

SYNC_S = 0.5
SKIP_PREFIX = "workertemp_"
TMP = ".tony-tmp"  # a file being written (_write), never restored
# The attempt whose chief writes the checkpoints now (the fence): an attempt's chief claims the
# directory as it starts, and a chief of an older attempt (its host cut off while the AM moved
# on, then back) reads it before its next write and stops writing. Attempt N's fence is N bytes
# long, so one GETFILESTATUS (the NameNode alone, no DataNode read) tells the newest attempt.
# Never restored.
FENCE = CHECKPOINT_FENCE


class Fenced(Exception):
    """A newer attempt has claimed the checkpoint directory: this one must not write to it."""


class CheckpointMirror:
    # This task's attempt, for the fence (0: none, where one writer is certain otherwise).
    attempt = 0
    _fence_read = False  # in this round of sync()

    def __init__(self, local: Path, remote: str, webhdfs: str, user: str, attempt: int = 0):
        self.local, self.remote = local, remote.rstrip("/")
        self.attempt = attempt
        self.client = tokens.webhdfs_client(webhdfs, user)
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
                if name.endswith(TMP) or rel == FENCE:
                    continue  # a write that did not finish; the fence
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

        TensorFlow's ``checkpoint`` index names the newest checkpoint and is written after the
        data it names, and the checkpoint before it is deleted soon after. So a round reads each
        index and, at once, the files of the checkpoint it names into memory; uploads those,
        then the index; then other files (not TensorFlow's in-progress ones); and deletes from
        HDFS only what no uploaded index names. HDFS always holds a whole checkpoint, however
        slow the uploads and wherever the chief is killed."""
        self._fence_read = False
        captured = []  # (index rel, index stat, index bytes, prefix, {rel: (stat, bytes)})
        for rel in self._local_files():
            if posixpath.basename(rel) != "checkpoint":
                continue
            st, data = self._read(rel)
            if not data or self.sent.get(rel) == st:
                continue
            prefix = self._named(rel, data.decode("utf-8", errors="replace"))
            files = {}
            if prefix:
                d = self.local / posixpath.dirname(prefix)
                for path in d.glob(posixpath.basename(prefix) + ".*"):
                    frel = os.path.relpath(path, self.local)
                    files[frel] = self._read(frel)
                complete = any(r.endswith(".index") for r in files) and any(
                    ".data-" in r for r in files
                )
                if not complete or not all(b for _, b in files.values()):
                    continue  # swept meanwhile: the next round reads the newer one
            captured.append((rel, st, data, prefix, files))
        changed = 0
        for rel, st, data, prefix, files in captured:
            for frel, (fst, fdata) in sorted(files.items()):
                if self.sent.get(frel) != fst:
                    self._write(frel, fdata, fst)
                    changed += 1
            self._write(rel, data, st)
            self.named[rel] = prefix
            changed += 1
        current = self._local_files()
        for rel, st in sorted(current.items()):
            if self.sent.get(rel) == st or self._tensorflow_file(rel):
                continue
            _, data = self._read(rel)
            self._write(rel, data, st)
            changed += 1
        # Never delete an index, nor what an index on HDFS names (the job's end deletes the
        # whole staging directory).
        keep = tuple(p + "." for p in self.named.values() if p)
        gone = [
            rel
            for rel in self.sent
            if rel not in current
            and posixpath.basename(rel) != "checkpoint"
            and not rel.startswith(keep or "\0")
        ]
        for rel in gone:
            self._check_fence()
            self.client.delete(f"{self.remote}/{rel}")
            del self.sent[rel]
        return changed + len(gone)

    def _write(self, rel: str, data: bytes, st: tuple[int, int]) -> None:
        """Written beside, then renamed: a write that fails (a quota reached) leaves the file
        HDFS held before whole, for the next attempt to restore."""
        self._check_fence()
        dest = f"{self.remote}/{rel}"
        tmp = posixpath.join(posixpath.dirname(dest), f".{posixpath.basename(dest)}{TMP}")
        try:
            self.client.write(tmp, data=data, overwrite=True)
            self.client.delete(dest)
            self.client.rename(tmp, dest)
        except Exception as e:  # HdfsError, or the connection's
            try:
                self.client.delete(tmp)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            msg = quota.worded(dest, e)
            if msg:
                raise quota.QuotaError(msg) from None
            raise
        self.sent[rel] = st

    @staticmethod
    def _tensorflow_file(rel: str) -> bool:
        """An index, a checkpoint's data/index file or a save in progress: only uploaded as
        part of the checkpoint an index names."""
        name = posixpath.basename(rel)
        return (
            name == "checkpoint"
            or name.endswith(".index")
            or ".data-" in name
            or "_temp" in rel
            or name.startswith("checkpoint.tmp")
        )

    def _read(self, rel: str) -> tuple[tuple[int, int], bytes]:
        try:
            st = os.stat(self.local / rel)
            return (st.st_size, st.st_mtime_ns), (self.local / rel).read_bytes()
        except FileNotFoundError:
            return (0, 0), b""

    def _named(self, index_rel: str, text: str) -> str:
        """The checkpoint a TensorFlow ``checkpoint`` index names, relative to the mirror."""
        m = re.search(r'^model_checkpoint_path: "(.*)"$', text, re.MULTILINE)
        if not m:
            return ""
        prefix = m.group(1)
        if os.path.isabs(prefix):
            return os.path.relpath(prefix, self.local)
        return posixpath.normpath(posixpath.join(posixpath.dirname(index_rel), prefix))

    def claim(self) -> None:
        """This attempt's chief takes the directory over before its first write (Fenced if a
        newer attempt has already)."""
        if not self.attempt:
            return
        self._fence_read = False
        self._check_fence()
        self.client.write(f"{self.remote}/{FENCE}", data=b"#" * self.attempt, overwrite=True)

    def _check_fence(self) -> None:
        """Once per round, before its first write: Fenced if a newer attempt claimed the
        directory. Read only in a round that writes (a day-long job's idle rounds cost the
        NameNode nothing)."""
        if not self.attempt or self._fence_read:
            return
        status = self.client.status(f"{self.remote}/{FENCE}", strict=False)
        if status is not None:
            newest = int(status.get("length", 0))
            if newest > self.attempt:
                raise Fenced(
                    f"attempt {newest} has started: this task of attempt {self.attempt} writes "
                    "no more checkpoints"
                )
        self._fence_read = True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="checkpoint-sync", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SYNC_S):
            try:
                self.sync()
            except Fenced as e:
                print(f"[tony] checkpoint sync to HDFS stopped: {e}", flush=True)
                return
            except Exception as e:  # noqa: BLE001 - retried next round; training goes on
                self.errors += 1
                if self.errors in (1, 10, 100):
                    print(f"[tony] checkpoint sync to HDFS failed ({self.errors}x): {e}")

    def close(self) -> None:
        """Stop the background sync and save the last state."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            try:
                self.sync()
            except Fenced as e:
                print(f"[tony] the last checkpoint sync to HDFS not made: {e}", flush=True)


def from_env(is_chief: bool) -> CheckpointMirror | None:
    """The mirror a YARN executor uses (TONY_CHECKPOINT_REMOTE set), else None. Points
    TONY_CHECKPOINT_DIR, which checkpoint_dir() returns, at the container-local copy."""
    remote = os.environ.get(V("checkpoint_remote"))
    if not remote:
        return None
    local = jobdir.JobDir(Path(os.environ.get(V("bundle_dir"), ".")).resolve()).checkpoints
    os.environ[V("checkpoint_dir")] = str(local)
    user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER", "")
    attempt = int(os.environ.get(V("attempt"), "1"))
    mirror = CheckpointMirror(local, remote, os.environ[V("webhdfs_url")], user, attempt)
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
        try:
            mirror.claim()
        except Fenced as e:
            print(f"[tony] checkpoints not mirrored to HDFS: {e}", flush=True)
            return mirror
        mirror.start()
    return mirror


def for_round(rank0: bool) -> CheckpointMirror | None:
    """An elastic job on YARN (executor/elastic.py): rank 0 of a rendezvous round may run on any
    task, so each task's first process restores the newest checkpoint from HDFS as its round
    starts, and the round's rank 0 alone mirrors it back while it runs. The agents stop every
    process of a round before the next one starts: one writer at a time. No fence (FENCE): a
    replaced worker's attempt is its own, higher than its round's others'."""
    remote = os.environ.get(V("checkpoint_remote"))
    if not remote:
        return None
    user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER", "")
    local = Path(os.environ[V("checkpoint_dir")])
    mirror = CheckpointMirror(local, remote, os.environ[V("webhdfs_url")], user)
    restored = mirror.restore()
    print(f"[tony] this round starts from {restored} checkpoint files from hdfs", flush=True)
    if rank0:
        mirror.start()
    return mirror


def keep_tensorboard() -> None:
    """YARN, the chief: its TensorBoard log dir (report()'s and Keras's event files) uploaded
    once, at the end, to ``<staging>/tensorboard``, which the AM moves into the job's history
    entry (am/yarn/historyhdfs.py): a finished job's TensorBoard reads it there. Never fails the
    task: a problem is one log line."""
    remote = os.environ.get(V("checkpoint_remote"))
    logdir = os.environ.get(V("tensorboard_dir"))
    if not remote or not logdir or not os.path.isdir(logdir):
        return
    from .. import runtime

    try:
        if runtime._scalars.writer is not None:
            runtime._scalars.writer.flush()
        user = os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER", "")
        dest = posixpath.join(posixpath.dirname(remote.rstrip("/")), jobdir.TENSORBOARD)
        mirror = CheckpointMirror(Path(logdir), dest, os.environ[V("webhdfs_url")], user)
        for rel, st in sorted(mirror._local_files().items()):
            _, data = mirror._read(rel)
            mirror._write(rel, data, st)
    except Exception as e:  # noqa: BLE001 - the history just has no TensorBoard then
        print(f"[tony] TensorBoard event files not kept in the history: {e}", flush=True)
