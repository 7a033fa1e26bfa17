"""The directory shipped with a job, as TonY's ``--src_dir`` ships one: the script's directory
for ``%tony run``, the notebook's working directory for ``%%tony`` cells.

Files are laid out as they sit under the notebook's working directory, so relative paths
resolve in a task as they would from the notebook (``rel``: where the directory sits under
it). The content hash covers every file's name, mode and bytes: YARN uploads an archive once
per hash.

What is shipped is what a job needs: names left out by ``.gitignore``/``.tonyignore`` and the
defaults (shipignore.py) and virtual environments are skipped, and files that may hold
credentials (``shipignore.SECRETS``) too, said by name; so are files over
``MAX_FILE_BYTES`` (unless a ``!`` line of a ``.tonyignore`` asks for them), links that lead out
of the directory (unless ``follow_links``), pseudo-files (procfs, sysfs, ...), special files,
names that are not UTF-8 and unreadable files: each said in one brief notice (``SrcDir.notice``).
Sizes are counted as the bytes are read, never taken from ``stat``; what is left still heavier
than ``MAX_BYTES`` or more than ``MAX_FILES`` files is refused before anything is submitted.
The archive holds directories and regular files only (no links), as safefiles.py unpacks.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SpecError
from .shipignore import Rules

MAX_BYTES = 100 << 20
MAX_FILES = 10_000
MAX_FILE_BYTES = 10 << 20  # larger files are left out unless asked for in .tonyignore
MAX_DEPTH = 100
CHUNK = 1 << 20
# Filesystems whose files are the kernel's, not data: never shipped, even through a link.
PSEUDO_FS = frozenset(
    "proc sysfs devtmpfs devpts debugfs tracefs securityfs cgroup cgroup2 configfs fusectl bpf "
    "pstore efivarfs mqueue hugetlbfs binfmt_misc autofs rpc_pipefs nsfs".split()
)


@dataclass(frozen=True)
class ShippedFile:
    name: str  # in the shipped tree
    path: str  # the local file (a link's target)
    size: int  # bytes read when hashed
    mode: int  # shipped mode
    sha256: str


@dataclass(frozen=True)
class SrcDir:
    path: str  # the local directory
    rel: str  # where it sits under the notebook's working directory ("" = there, or outside)
    files: tuple[ShippedFile, ...]  # sorted by name
    size: int
    digest: str
    left_out: tuple[tuple[str, str, str], ...] = field(default=())  # (why, name, detail)

    def meta(self) -> dict:
        """What the executor reads from bundle.json: where to put itself."""
        return {"rel": self.rel, "hash": self.digest, "files": len(self.files), "bytes": self.size}

    @property
    def notice(self) -> str:
        """One brief line: what was left out and how to include it ("" when nothing was)."""
        return notice(self.path, self.left_out)


LARGE, LINK_OUT, PSEUDO, SPECIAL, BAD_NAME, UNREADABLE, SECRET = (
    "large", "link out", "pseudo", "special", "bad name", "unreadable", "secret"
)  # fmt: skip
_HOW = {
    SECRET: "may hold credentials; ship one with a '!NAME' line in .tonyignore",
    LARGE: f"over {MAX_FILE_BYTES >> 20} MB each; ship one with a '!NAME' line in .tonyignore",
    LINK_OUT: "links out of the directory; follow them with --src-follow-links",
    PSEUDO: "pseudo-files (procfs, sysfs, ...), never shipped",
    SPECIAL: "not regular files (FIFOs, sockets, devices), never shipped",
    BAD_NAME: "names that are not UTF-8; rename them to ship them",
    UNREADABLE: "unreadable",
}
SHOWN = 3


def notice(directory: str, left_out: tuple[tuple[str, str, str], ...]) -> str:
    if not left_out:
        return ""
    parts = []
    for why, how in _HOW.items():
        got = [f"{n} ({d})" if d else n for w, n, d in left_out if w == why]
        if got:
            more = f" and {len(got) - SHOWN} more" if len(got) > SHOWN else ""
            parts.append(f"{', '.join(got[:SHOWN])}{more}: {how}")
    return f"tony-jupyter: not shipped from {directory}: " + "; ".join(parts)


def _is_venv(d: str) -> bool:
    return os.path.exists(os.path.join(d, "pyvenv.cfg")) or os.path.isdir(
        os.path.join(d, "conda-meta")
    )


def _pseudo_devices() -> frozenset[int]:
    """st_dev of every mounted pseudo filesystem."""
    devs = set()
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            mounts = [line.split() for line in f]
    except OSError:
        mounts = [["", "/proc", "proc"], ["", "/sys", "sysfs"]]
    for m in mounts:
        if len(m) >= 3 and m[2] in PSEUDO_FS:
            try:
                devs.add(os.stat(m[1].replace("\\040", " ")).st_dev)
            except OSError:
                pass
    return frozenset(devs)


def _too_big(directory: str, what: str) -> SpecError:
    return SpecError(
        f"the directory shipped with the job, {directory}, holds {what} even without the "
        f"files left out (over {MAX_FILE_BYTES >> 20} MB each, .gitignore, .tonyignore, hidden "
        f"entries, virtual environments); at most {MAX_BYTES >> 20} MB in {MAX_FILES} files are "
        "shipped. List what the job does not need in .tonyignore (gitignore syntax), read data "
        "from HDFS or an absolute path, ship another directory with --src-dir DIR, or none with "
        "--no-src-dir (nothing was submitted)"
    )


def _shown(path: str) -> str:
    """A name as it can be printed, whatever bytes it holds."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB" if n >= 1 << 20 else f"{n} bytes"


def _read(path: str, st: os.stat_result, limit: int) -> tuple[int, str] | None:
    """(bytes, sha256) of the file, read through no link and stopping past ``limit`` bytes;
    None if it is no longer the regular file that was looked at."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb", buffering=0) as f:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
        h, n = hashlib.sha256(), 0
        while n <= limit and (chunk := f.read(CHUNK)):
            n += len(chunk)
            h.update(chunk)
        return n, h.hexdigest()


class _Walk:
    def __init__(self, top: str, exclude: frozenset[str], follow: bool):
        self.top, self.exclude, self.follow = top, exclude, follow
        self.pseudo = _pseudo_devices()
        self.left_out: list[tuple[str, str, str]] = []
        self.files: list[ShippedFile] = []
        self.total = 0

    def _inside(self, real: str) -> bool:
        return os.path.commonpath([self.top, real]) == self.top

    def run(self) -> None:
        self._dir(self.top, "", Rules.for_root(self.top), frozenset({self.top}))

    def _entries(self, real_dir: str, rel: str) -> Iterator[tuple[str, str]]:
        try:
            names = sorted(os.listdir(real_dir))
        except OSError as e:
            self.left_out.append((UNREADABLE, rel or ".", e.strerror or str(e)))
            return
        for name in names:
            shipped = f"{rel}/{name}" if rel else name
            try:
                shipped.encode("utf-8")
            except UnicodeEncodeError:
                self.left_out.append((BAD_NAME, _shown(shipped), ""))
                continue
            yield name, shipped

    def _dir(self, real_dir: str, rel: str, rules: Rules, above: frozenset[str]) -> None:
        if len(above) > MAX_DEPTH:
            raise _too_big(self.top, f"directories nested more than {MAX_DEPTH} deep")
        for name, shipped in self._entries(real_dir, rel):
            path = os.path.join(real_dir, name)
            try:
                st = os.lstat(path)
                real = path
                if stat.S_ISLNK(st.st_mode):
                    real = os.path.realpath(path)
                    if not self._inside(real) and not self.follow:
                        self.left_out.append((LINK_OUT, shipped, _shown(os.readlink(path))))
                        continue
                    st = os.stat(real)
            except OSError:
                continue  # a dangling link, or gone since it was listed
            if st.st_dev in self.pseudo:
                self.left_out.append((PSEUDO, shipped, _shown(real) if real != path else ""))
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            decided = rules.decide(shipped, is_dir)
            if decided.left_out:
                if decided.secret:
                    self.left_out.append((SECRET, shipped + ("/" if is_dir else ""), ""))
                continue
            if is_dir:
                if real in above or real in self.exclude or _is_venv(real):
                    continue  # a link back up the tree; the jobs' records; a venv
                self._dir(real, shipped, rules.child(real, shipped), above | {real})
            elif not stat.S_ISREG(st.st_mode):
                self.left_out.append((SPECIAL, shipped, ""))
            else:
                self._file(shipped, real, st, decided.asked)

    def _file(self, shipped: str, real: str, st: os.stat_result, asked: bool) -> None:
        limit = MAX_BYTES if asked else MAX_FILE_BYTES
        if st.st_size > limit:
            if asked:  # asked for by name: not left out unsaid
                raise _too_big(self.top, f"{shipped}, more than {MAX_BYTES >> 20} MB")
            self.left_out.append((LARGE, shipped, _mb(st.st_size)))
            return
        try:
            got = _read(real, st, limit)
        except OSError as e:
            self.left_out.append((UNREADABLE, shipped, e.strerror or str(e)))
            return
        if got is None:
            return  # replaced since it was looked at
        size, sha = got
        if size > limit:  # it said fewer bytes than it had: counted as read
            if asked:
                raise _too_big(self.top, f"{shipped}, more than {MAX_BYTES >> 20} MB")
            self.left_out.append((LARGE, shipped, f"more than {_mb(limit)} read"))
            return
        self.total += size
        mode = (st.st_mode & 0o755) | 0o644
        self.files.append(ShippedFile(shipped, real, size, mode, sha))
        if self.total > MAX_BYTES:
            raise _too_big(self.top, f"more than {MAX_BYTES >> 20} MB")
        if len(self.files) > MAX_FILES:
            raise _too_big(self.top, f"more than {MAX_FILES} files")


def collect(
    directory: str | os.PathLike,
    cwd: str | os.PathLike | None = None,
    exclude: tuple[str | os.PathLike, ...] = (),
    follow_links: bool = False,
) -> SrcDir:
    """The files of ``directory`` to ship, checked against the bounds, and their hash;
    directories in ``exclude`` (the jobs' own records) are left out."""
    d = os.path.realpath(directory)
    if not os.path.isdir(d):
        raise SpecError(f"--src-dir {directory}: no such directory (nothing was submitted)")
    if os.stat(d).st_dev in _pseudo_devices():
        raise SpecError(
            f"--src-dir {directory}: a pseudo filesystem (procfs, sysfs, ...) is not shipped; "
            "ship another directory with --src-dir DIR (nothing was submitted)"
        )
    base = os.path.realpath(cwd or os.getcwd())
    rel = os.path.relpath(d, base)
    rel = "" if rel == "." or rel.startswith("..") else rel
    walk = _Walk(d, frozenset(os.path.realpath(e) for e in exclude), follow_links)
    walk.run()
    files = []
    h = hashlib.sha256()
    for f in sorted(walk.files, key=lambda f: f.name):
        shipped = f"{rel}/{f.name}" if rel else f.name
        files.append(ShippedFile(shipped, f.path, f.size, f.mode, f.sha256))
        h.update(f"{shipped}\0{oct(f.mode)}\0{f.sha256}\0".encode())
    return SrcDir(d, rel, tuple(files), walk.total, h.hexdigest()[:32], tuple(walk.left_out))


def _changed(f: ShippedFile) -> SpecError:
    return SpecError(
        f"{f.path} changed while the job was being submitted; run it again (nothing was submitted)"
    )


def _chunks(f: ShippedFile) -> Iterator[bytes]:
    """The bytes of ``f`` as hashed by collect (SpecError if they changed since)."""
    try:
        st = os.stat(f.path)
        fd = os.open(f.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise _changed(f) from None
    h, n = hashlib.sha256(), 0
    with os.fdopen(fd, "rb", buffering=0) as src:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_ino != st.st_ino:
            raise _changed(f)
        while n <= f.size and (chunk := src.read(CHUNK)):
            n += len(chunk)
            h.update(chunk)
            yield chunk
    if n != f.size or h.hexdigest() != f.sha256:
        raise _changed(f)


def copy_into(src: SrcDir, dest: Path) -> None:
    """The local backend: the job's own copy (tasks may write beside their files)."""
    dest.mkdir(exist_ok=True)
    for f in src.files:
        target = dest / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as out:
            for chunk in _chunks(f):
                out.write(chunk)
        os.chmod(target, f.mode)


class _Source(io.RawIOBase):
    """A file's checked chunks as what ``tarfile.addfile`` reads."""

    def __init__(self, f: ShippedFile):
        self._it, self._buf = _chunks(f), b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n], self._buf = self._buf[:n], self._buf[n:]
        return n

    def drain(self) -> None:
        for _ in self._it:  # the end: where a change since collect is noticed
            pass


def archive(src: SrcDir) -> bytes:
    """A tar.gz of the shipped tree (YARN localizes it as an ARCHIVE); cached by ``digest``.
    Regular files only: no link, absolute or not, is kept."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for f in src.files:
            info = tarfile.TarInfo(f.name)
            info.size, info.mode, info.type = f.size, f.mode, tarfile.REGTYPE
            source = _Source(f)
            tar.addfile(info, io.BufferedReader(source))
            source.drain()
    return buf.getvalue()
