"""``--pack-env``: the job's Python environment packed from a venv, uploaded once per content hash.

The venv is packed with venv-pack (a ``.tar.gz`` whose ``bin/python`` still links to the venv's
*base* interpreter, the ``home`` in ``pyvenv.cfg``: that interpreter must exist at the same path
on every node; the packed part is site-packages and the scripts). The archive is cached on HDFS
at ``/user/<user>/.tony-jupyter/envs/<hash>.tar.gz`` and localized as a YARN ARCHIVE named
``env`` in the AM's and every executor's container, which run ``env/bin/python``.

The content hash is over the venv's file list with each file's size and mtime (and each
symlink's target), ``__pycache__`` left out: it reads no file's content, so it takes well under a
second for a large venv. Any install, upgrade or edit in the venv changes it; merely running
Python in it (which writes ``__pycache__``) does not. It also covers what the archive leaves out
(``LEFT_OUT``, ``shipignore.SECRETS``; a venv's own ``.tonyignore`` is one of its files), so
a change of those rules makes a new archive.

The archive leaves out ``__pycache__`` and TensorFlow's C++ headers (``tensorflow/include``:
18,500 of the 22,000 files of a TensorFlow install, 430 MB unpacked), which only a build of a
custom op reads; and hidden files and files that may hold credentials (venvfiles.py), named
once when the venv is packed.

Editable installs (``pip install -e``, editables.py) go with it: each one's code, under the
shipped directory's rules (srcdir.py), is added under ``site-packages/__tony_editable__/`` and
its ``.pth`` names that copy, so a task imports the code the kernel imports; the content hash
covers that code's bytes, so an edit makes a new archive.

Files, not bytes, are what a NodeManager's unpacking costs most where Hadoop's
native library is missing: it sets each unpacked file's permissions with one ``chmod`` process
per file (a few milliseconds each).

venv-pack writes a plain ``.tar``; ``gzip_in_parallel`` compresses it on every core, as pigz does:
the tar cut in 4 MiB blocks, each one gzip member (RFC 1952 allows a file of several members, and
the NodeManager unpacks with ``gzip -dc``), compressed by zlib in a thread (zlib lets go of the
GIL). The 1.5 GB tar of a TensorFlow venv takes 47 s to gzip on one core at level 4 (venv-pack's
own level); the members cost 0.03 % in size. By hand rather than a library: 20 lines over the
standard library's zlib, no new dependency. The plain tar is on disk beside the archive while it
compresses (1.5 GB more, for that time, for a TensorFlow venv).
Only venvs (``python -m venv`` /
virtualenv: a ``pyvenv.cfg`` at the root) are supported; conda environments are not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import os
import socket
import sys
import tempfile
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from ...core import srcdir
from ...core.errors import BackendError, SpecError
from ...core.shipignore import SECRETS
from ...core.spec import JobSpec
from ...core.venvdir import venv_root
from . import editables, venvfiles

ENV_NAME = "env"  # the ARCHIVE's link name in the container
PYTHON = f"{ENV_NAME}/bin/python"
SKIP_DIRS = {"__pycache__"}
# venv-pack's fnmatch patterns over paths in the venv: never in the archive.
LEFT_OUT = ("*/__pycache__/*", "*/site-packages/tensorflow/include/*")
COMPRESS_LEVEL = 4  # venv-pack's own default: sizes as before, only sooner
BLOCK = 4 << 20  # bytes of tar per gzip member


def content_hash(prefix: Path) -> str:
    """sha256 over (relative path, size, mtime) of every file and (path, target) of every link."""
    h = hashlib.sha256("\0".join(LEFT_OUT + SECRETS + venvfiles.HIDDEN).encode() + b"\n")
    for root, dirs, files in os.walk(prefix):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        rel_root = os.path.relpath(root, prefix)
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            full = os.path.join(root, name)
            rel = os.path.join(rel_root, name)
            st = os.lstat(full)
            if os.path.islink(full):
                h.update(f"L\0{rel}\0{os.readlink(full)}\n".encode())
            else:
                h.update(f"F\0{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    for code in editable_sources(prefix):
        h.update(f"E\0{code.entry}\0{code.digest}\n".encode())
    return h.hexdigest()[:40]


@dataclasses.dataclass(frozen=True)
class EditableCode:
    """One root of an editable install as it goes in the archive."""

    pth: str  # the venv-relative .pth that points at the project, replaced in the archive
    entry: str  # the sys.path entry the replacement .pth names, relative to site-packages
    files: tuple[tuple[str, str], ...]  # (local file, venv-relative name in the archive)
    digest: str
    notice: str  # what the shipped directory's rules left out ("" if nothing)


def editable_sources(prefix: Path) -> list[EditableCode]:
    """Each editable install's code (editables.py), under the shipped directory's rules
    (srcdir.py), placed under ``site-packages/__tony_editable__/``."""
    found = editables.discover(prefix)
    if found.unknown:
        raise SpecError(
            f"--pack-env {prefix}: {', '.join(found.unknown)} installs a package editable "
            "through an import hook tony-jupyter cannot follow; install it without -e "
            "(pip install PATH) in the venv, or use setuptools' or hatchling's editable "
            "install (nothing was submitted)"
        )
    out = []
    for e in found.editables:
        site = os.path.dirname(e.pth)
        for n, root in enumerate(e.roots):
            entry = f"{editables.SHIPPED}/{Path(e.pth).stem}/{n}"
            base = f"{site}/{entry}"
            if root.kind == editables.MAPPED and not os.path.isdir(root.source):
                data = Path(root.source).read_bytes()  # a module mapped to its file
                name = f"{base}/{os.path.basename(root.source)}"
                digest = hashlib.sha256(data).hexdigest()
                out.append(EditableCode(e.pth, entry, ((root.source, name),), digest, ""))
                continue
            if root.kind == editables.MAPPED:
                base += f"/{root.name}"
            try:
                src = srcdir.collect(root.source, cwd=root.source)
            except SpecError as err:
                raise SpecError(
                    f"--pack-env {prefix}: the editable install of {', '.join(e.dists)} "
                    f"({root.source}) cannot go with the job: {err}"
                ) from None
            files = tuple((f.path, f"{base}/{f.name}") for f in src.files)
            out.append(EditableCode(e.pth, entry, files, src.digest, src.notice))
    return out


def pack(prefix: Path, output: Path) -> None:
    """``prefix`` packed into ``output`` (.tar.gz) with venv-pack: ``LEFT_OUT`` and what
    venvfiles.py leaves out (hidden and credential files) left out, each editable install's code
    added (``editable_sources``), what was left out said once, here; and compressed on every
    core (``gzip_in_parallel``)."""
    try:
        import venv_pack
    except ImportError:
        raise BackendError(
            "--pack-env needs the venv-pack package in the kernel's environment: "
            "pip install venv-pack"
        ) from None
    tar = output.with_name(output.name + ".tar")
    try:
        try:
            env = _env(venv_pack, prefix)
            for pattern in LEFT_OUT:
                env = env.exclude(pattern)
            out = venvfiles.left_out(prefix)
            env.files = [f for f in env.files if not out.covers(f.target.replace(os.sep, "/"))]
            notices = [out.notice(prefix)] if out.names else []
            with tempfile.TemporaryDirectory(prefix="tony-pth-") as tmp:
                env.files = _with_editables(venv_pack, prefix, env.files, Path(tmp), notices)
                env.pack(output=str(tar), format="tar", force=True, verbose=False)
        except venv_pack.VenvPackException as e:
            raise BackendError(f"--pack-env {prefix}: venv-pack cannot pack it: {e}") from None
        for line in notices:
            print(line, file=sys.stderr, flush=True)
        gzip_in_parallel(tar, output)
    finally:
        tar.unlink(missing_ok=True)


_UNCHECKED = threading.Lock()


def _env(venv_pack, prefix: Path):
    """venv-pack's view of the venv, without its refusal of editable installs, whose code
    ``_with_editables`` adds (venv-pack has no option to skip that check: it is replaced for
    the call, under a lock)."""
    core = venv_pack.core
    with _UNCHECKED:
        check = core.check_no_editable_packages
        core.check_no_editable_packages = lambda context: None
        try:
            return venv_pack.Env(str(prefix))
        finally:
            core.check_no_editable_packages = check


def _with_editables(venv_pack, prefix: Path, files: list, tmp: Path, notices: list[str]) -> list:
    """``files`` with each editable install's code added and its ``.pth`` naming that code
    (written in ``tmp``) in place of the one naming the project."""
    code = editable_sources(prefix)
    if not code:
        return files
    pths: dict[str, list[str]] = {}
    for c in code:
        pths.setdefault(c.pth, []).append(c.entry)
    out = [f for f in files if f.target not in pths]
    for c in code:
        out += [venv_pack.core.File(local, name) for local, name in c.files]
        if c.notice:
            notices.append(c.notice)
    for n, (pth, entries) in enumerate(sorted(pths.items())):
        local = tmp / f"{n}.pth"
        local.write_text("".join(f"{entry}\n" for entry in dict.fromkeys(entries)))
        out.append(venv_pack.core.File(str(local), pth))
    return out


def gzip_in_parallel(source: Path, output: Path, threads: int | None = None) -> None:
    """``source`` gzipped into ``output``: one gzip member per ``BLOCK``, on ``threads`` threads
    (default: one per core), written in order; at most two blocks per thread in memory."""
    threads = threads or os.cpu_count() or 1

    def member(block: bytes) -> bytes:
        z = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
        return z.compress(block) + z.flush()

    with open(source, "rb") as src, open(output, "wb") as out:
        with ThreadPoolExecutor(threads) as pool:
            pending = []
            while block := src.read(BLOCK):
                pending.append(pool.submit(member, block))
                if len(pending) >= 2 * threads:
                    out.write(pending.pop(0).result())
            for f in pending:
                out.write(f.result())
        if out.tell() == 0:  # an empty source is still a gzip file
            out.write(member(b""))


_IP = (socket.AF_INET, socket.AF_INET6)


def this_hosts_addresses() -> set[str]:
    found = {"127.0.0.1", "::1"}
    for addrs in psutil.net_if_addrs().values():
        found.update(a.address.split("%")[0] for a in addrs if a.family in _IP)
    return found


def is_this_host(name: str, here: set[str]) -> bool:
    """Whether host ``name`` resolves to this machine (a loopback or one of its interfaces'
    addresses); a name that does not resolve here is taken for another host."""
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    addrs = {str(i[4][0]).split("%")[0] for i in infos}
    return bool(addrs) and all(a in here or ipaddress.ip_address(a).is_loopback for a in addrs)


def by_default(spec: JobSpec, node_hosts: list[str]) -> JobSpec:
    """The job's Python where the user named none: this kernel's venv packed (``--pack-env``)
    when the kernel runs in a venv and a NodeManager is another host, which cannot have the
    venv's files; else as asked (a kernel outside a venv, or nodes on this host, run this
    interpreter's path on the nodes, as before). ``--python PATH`` opts out."""
    if spec.pack_env or spec.python or sys.prefix == sys.base_prefix:
        return spec
    here = this_hosts_addresses()
    elsewhere = sorted(h for h in node_hosts if not is_this_host(h, here))
    if not elsewhere:
        return spec
    root = venv_root(None)
    print(
        f"tony-jupyter: the nodes ({', '.join(elsewhere[:3])}"
        f"{', ...' if len(elsewhere) > 3 else ''}) are other hosts: this kernel's venv {root} "
        "goes with the job (--pack-env, uploaded once per content); --python PATH names a "
        "Python the nodes have instead",
        file=sys.stderr,
    )
    return dataclasses.replace(spec, pack_env=str(root))
