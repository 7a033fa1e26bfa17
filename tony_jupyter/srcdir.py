"""The directory shipped with a job, as TonY's ``--src_dir`` ships one: the script's directory
for ``%tony run``, the notebook's working directory for ``%%tony`` cells.

Files are laid out as they sit under the notebook's working directory, so relative paths
resolve in a task as they would from the notebook (``rel``: where the directory sits under
it). The content hash covers every file's name, mode and bytes: YARN uploads an archive once
per hash. Junk is skipped (hidden entries such as ``.git`` and ``.ipynb_checkpoints``,
``__pycache__``, virtual environments); a directory heavier than ``MAX_BYTES`` is refused
before anything is submitted.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .errors import SpecError

MAX_BYTES = 100 << 20
MAX_FILES = 10_000
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
SKIP_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class SrcDir:
    path: str  # the local directory
    rel: str  # where it sits under the notebook's working directory ("" = there, or outside)
    files: tuple[tuple[str, str], ...]  # (name in the shipped tree, local path), sorted
    size: int
    digest: str

    def meta(self) -> dict:
        """What the executor reads from bundle.json: where to put itself."""
        return {"rel": self.rel, "hash": self.digest, "files": len(self.files), "bytes": self.size}


def _is_venv(d: str) -> bool:
    return os.path.exists(os.path.join(d, "pyvenv.cfg")) or os.path.isdir(
        os.path.join(d, "conda-meta")
    )


def _too_big(directory: str, what: str) -> SpecError:
    return SpecError(
        f"the directory shipped with the job, {directory}, holds {what}; at most "
        f"{MAX_BYTES >> 20} MB in {MAX_FILES} files are shipped (hidden entries, __pycache__ "
        "and virtual environments are skipped). Move data out of it (read it from HDFS or an "
        "absolute path), ship another directory with --src-dir DIR, or none with --no-src-dir "
        "(nothing was submitted)"
    )


def _walk(directory: str, exclude: frozenset[str]) -> list[tuple[str, str, int]]:
    """(relative name, path, size) of the files to ship, stopping as soon as the bound is hit."""
    found: list[tuple[str, str, int]] = []
    total = 0
    for here, dirs, names in os.walk(directory):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and not os.path.islink(os.path.join(here, d))
            and not _is_venv(os.path.join(here, d))
            and os.path.realpath(os.path.join(here, d)) not in exclude
        )
        for name in sorted(names):
            if name.startswith(".") or name.endswith(SKIP_SUFFIXES):
                continue
            path = os.path.join(here, name)
            try:
                st = os.stat(path)
            except OSError:  # a dangling link
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            total += st.st_size
            found.append((os.path.relpath(path, directory), path, st.st_size))
            if total > MAX_BYTES:
                raise _too_big(directory, f"more than {MAX_BYTES >> 20} MB")
            if len(found) > MAX_FILES:
                raise _too_big(directory, f"more than {MAX_FILES} files")
    return found


def collect(
    directory: str | os.PathLike,
    cwd: str | os.PathLike | None = None,
    exclude: tuple[str | os.PathLike, ...] = (),
) -> SrcDir:
    """The files of ``directory`` to ship, checked against the bounds, and their hash;
    directories in ``exclude`` (the jobs' own records) are left out."""
    d = os.path.realpath(directory)
    if not os.path.isdir(d):
        raise SpecError(f"--src-dir {directory}: no such directory (nothing was submitted)")
    base = os.path.realpath(cwd or os.getcwd())
    rel = os.path.relpath(d, base)
    rel = "" if rel == "." or rel.startswith("..") else rel
    h = hashlib.sha256()
    files, size = [], 0
    skip = frozenset(os.path.realpath(e) for e in exclude)
    for name, path, nbytes in _walk(d, skip):
        shipped = os.path.join(rel, name) if rel else name
        h.update(shipped.encode() + b"\0" + oct(os.stat(path).st_mode & 0o777).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
        files.append((shipped, path))
        size += nbytes
    return SrcDir(d, rel, tuple(files), size, h.hexdigest()[:32])


def copy_into(src: SrcDir, dest: Path) -> None:
    """The local backend: the job's own copy (tasks may write beside their files)."""
    for name, path in src.files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    dest.mkdir(exist_ok=True)


def archive(src: SrcDir) -> bytes:
    """A tar.gz of the shipped tree (YARN localizes it as an ARCHIVE); cached by ``digest``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for name, path in src.files:
            info = tar.gettarinfo(path, arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(path, "rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()
