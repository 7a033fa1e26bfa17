"""Files named by someone else: the one place that checks a name before we write it, and that
unpacks an archive (the shipped directory a warm AM hands its spare executors).

Python's ``tarfile`` filters are not relied on: ``filter="data"`` was bypassed on Python 3.11.7
(CVE-2025-4517: a chain of links that resolves outside the target once written). Our own
archives hold only directories and regular files (srcdir.py), so every other kind of member is
refused, links included; every name is checked before anything is written, files are created
new and never through a link, and sizes are counted as the bytes are read.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import IO

from .errors import UnsafeFileError

CHUNK = 1 << 20


def checked_name(name: str) -> str:
    """``name`` as a relative POSIX path that stays where it is put, or UnsafeFileError."""
    if not isinstance(name, str) or not name.strip("/"):
        raise UnsafeFileError(f"refused the file name {name!r}: it is empty")
    if "\0" in name or "\\" in name:
        raise UnsafeFileError(f"refused the file name {name!r}: it holds a NUL or a backslash")
    if name.startswith("/"):
        raise UnsafeFileError(f"refused the file name {name!r}: it is absolute")
    parts = [p for p in name.rstrip("/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeFileError(f"refused the file name {name!r}: it climbs out with '..'")
    if not parts:
        raise UnsafeFileError(f"refused the file name {name!r}: it names the directory itself")
    return "/".join(parts)


def inside(root: str | os.PathLike, name: str) -> Path:
    """Where ``name`` goes under ``root``, checked: relative, no '..', and not led out of
    ``root`` by a link already there on the way (a link in the last place is replaced by
    write_file, never written through)."""
    rel = checked_name(name)
    base = os.path.realpath(root)
    *dirs, last = rel.split("/")
    parent = os.path.realpath(os.path.join(base, *dirs))
    if os.path.commonpath([base, parent]) != base:
        raise UnsafeFileError(f"refused the file name {name!r}: it resolves outside {base}")
    return Path(parent, last)


def _parent_dirs(root: str, target: Path) -> None:
    """Make the directories between ``root`` and ``target``, none of them a link."""
    here = Path(root)
    for part in target.relative_to(root).parts[:-1]:
        here = here / part
        try:
            os.mkdir(here, 0o755)
        except FileExistsError:
            if here.is_symlink() or not here.is_dir():
                raise UnsafeFileError(
                    f"refused {target}: {here} is not a plain directory"
                ) from None


def _create(target: Path, mode: int) -> int:
    """A new file at ``target`` (an earlier one, or a link, is removed first, not written
    through)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(target, flags, mode)
    except FileExistsError:
        if target.is_dir() and not target.is_symlink():
            raise UnsafeFileError(f"refused {target}: a directory is there") from None
        target.unlink()
        return os.open(target, flags, mode)


def write_file(root: str | os.PathLike, name: str, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` as ``root/name``: the name checked (no absolute path, no '..', nothing
    that resolves outside ``root``), the file made anew rather than written through a link."""
    target = inside(root, name)
    base = os.path.realpath(root)
    _parent_dirs(base, target)
    inside(root, name)  # again: a directory made just now is not a link either
    fd = _create(target, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return target


def _kind(m: tarfile.TarInfo) -> str:
    if m.issym():
        return f"a symbolic link (to {m.linkname!r})"
    if m.islnk():
        return f"a hard link (to {m.linkname!r})"
    if m.ischr() or m.isblk():
        return "a device"
    if m.isfifo():
        return "a FIFO"
    return f"a member of type {m.type!r}"


def extract_tar(
    fileobj: IO[bytes], dest: str | os.PathLike, max_bytes: int, max_members: int
) -> int:
    """Unpack a (gzipped) tar of directories and regular files into ``dest``, which must be
    new or empty; the bytes written. Any other member (a link, a device, a FIFO), a name that
    leaves ``dest``, a name seen twice, more than ``max_members`` members or more than
    ``max_bytes`` read is refused (UnsafeFileError), and ``dest`` is removed again."""
    dest = Path(dest)
    if dest.is_symlink():
        raise UnsafeFileError(f"refused to unpack into {dest}: it is a link")
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise UnsafeFileError(f"refused to unpack into {dest}: it is not empty")
    base = os.path.realpath(dest)
    total = members = 0
    try:
        with tarfile.open(fileobj=fileobj, mode="r|*") as tar:  # a stream: read once, in order
            for m in tar:
                members += 1
                if members > max_members:
                    raise UnsafeFileError(f"refused the archive: more than {max_members} members")
                target = inside(base, m.name)
                if m.isdir():
                    _parent_dirs(base, target / "x")
                    continue
                if not m.isreg():
                    raise UnsafeFileError(f"refused the archive member {m.name!r}: {_kind(m)}")
                if total + m.size > max_bytes:
                    raise UnsafeFileError(f"refused the archive: more than {max_bytes} bytes")
                _parent_dirs(base, target)
                inside(base, m.name)
                src = tar.extractfile(m)
                try:
                    fd = os.open(
                        target,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                        (m.mode & 0o755) | 0o600,
                    )
                except FileExistsError:
                    raise UnsafeFileError(
                        f"refused the archive member {m.name!r}: the name comes twice"
                    ) from None
                with os.fdopen(fd, "wb") as out:
                    while src is not None and (chunk := src.read(CHUNK)):
                        total += len(chunk)
                        if total > max_bytes:
                            raise UnsafeFileError(
                                f"refused the archive: more than {max_bytes} bytes"
                            )
                        out.write(chunk)
    except (tarfile.TarError, EOFError, OSError, UnsafeFileError) as e:
        shutil.rmtree(dest, ignore_errors=True)
        if isinstance(e, UnsafeFileError):
            raise
        raise UnsafeFileError(f"refused the archive: {e}") from None
    return total
