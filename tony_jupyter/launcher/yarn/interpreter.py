"""A venv's base interpreter, shipped with it where the nodes lack it: which one, whether it can
run from another path, its archive, and the container's venv made to run on it.

A venv's ``bin/python`` links to its base interpreter (``home`` in ``pyvenv.cfg``): pyenv's
``~/.pyenv/versions/3.11.7``, a uv-managed ``~/.local/share/uv/python/cpython-3.11...``, a
system ``/usr``. Nodes that are other hosts rarely have the first two. CPython finds its prefix
from its own path (the ``lib/pythonX.Y/os.py`` landmark above its executable), so a prefix that
holds nothing but one CPython can be unpacked anywhere and run (pyenv's builds,
python-build-standalone's); a shared-library build (``--enable-shared``) finds its
``libpython`` through ``LD_LIBRARY_PATH``, which its RUNPATH does not override. A system prefix
(``/usr``, ``/usr/local``) holds everything else of its host too: it is not shipped
(``not_relocatable`` says why).

The archive holds the prefix less what no job runs: the base's own ``site-packages`` (a venv
without ``include-system-site-packages`` never reads it), the test suite, headers, static
libraries, man pages, ``__pycache__``, and the console scripts in its ``bin/``. In a
container the ARCHIVE is ``pyhome``; ``nodepython.prelude`` assembles a venv in the
container's directory (``pyvenv.cfg`` naming ``pyhome/bin``, its ``lib`` the packed venv's)
whose ``bin/python`` is the job's Python.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
from pathlib import Path

from ...core import nodepython
from ...core.venvdir import pyvenv_cfg

NAME = nodepython.SHIPPED  # the ARCHIVE's link name in the container
PYTHON = nodepython.SHIPPED_PYTHON
SYSTEM = frozenset({"/", "/usr", "/usr/local", "/opt", "/bin"})
# What the lib/ of a prefix of one CPython holds beside it (python-build-standalone: Tcl/Tk).
LIB = re.compile(r"^(python3\.\d+|libpython3.*|pkgconfig|tcl.*|tk.*|itcl.*|thread.*|.*\.a)$")
BIN = re.compile(r"^python[0-9.]*$")  # the bin/ entries shipped: the interpreter and its links


def base_prefix(venv: Path) -> Path | None:
    """The prefix of the venv's base interpreter (the directory above ``home``), found through
    its links; None when ``pyvenv.cfg`` names none that exists."""
    home = pyvenv_cfg(venv).get("home")
    if not home:
        return None
    real = Path(os.path.realpath(home))
    if not real.is_dir():
        return None
    return real.parent


def version(prefix: Path) -> str | None:
    """``3.11`` for a prefix holding ``lib/python3.11/os.py``."""
    for lib in sorted(prefix.glob("lib/python3.*/os.py")):
        return lib.parent.name.removeprefix("python")
    return None


def not_relocatable(prefix: Path) -> str | None:
    """Why the interpreter at ``prefix`` cannot be shipped, or None when it can."""
    if str(prefix) in SYSTEM:
        return f"{prefix} is a system prefix, shared with everything else installed there"
    ver = version(prefix)
    if ver is None or not (prefix / "bin" / f"python{ver}").exists():
        return f"{prefix} holds no CPython (no bin/python3.X beside lib/python3.X/os.py)"
    others = sorted(f"lib/{n}" for n in os.listdir(prefix / "lib") if not LIB.match(n))
    if others:
        shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        return f"{prefix} holds more than one CPython: its lib/ holds {shown}"
    return None


def left_out(rel: str, ver: str) -> bool:
    """Whether the prefix-relative path ``rel`` stays out of the archive."""
    parts = rel.split("/")
    if "__pycache__" in parts or rel.endswith(".a"):
        return True
    if parts[0] == "bin" and len(parts) == 2 and parts[1] and not BIN.match(parts[1]):
        return True  # console scripts of the base's own site-packages, which is left out
    if parts[0] in ("include", "share", "man") or rel.startswith("lib/pkgconfig"):
        return True
    std = f"lib/python{ver}/"
    return rel.startswith(
        tuple(std + d for d in ("site-packages/", "test/", "idlelib/idle_test/", "config-"))
    )


def files(prefix: Path) -> list[str]:
    """The prefix-relative paths the archive holds (links included, as links), sorted."""
    ver = version(prefix) or ""
    out = []
    for root, dirs, names in os.walk(prefix):
        rel_root = os.path.relpath(root, prefix)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if not left_out(rel_root + d + "/", ver))
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            if not left_out(rel_root + name, ver):
                out.append(rel_root + name)
    return out


def content_hash(prefix: Path) -> str:
    """sha256 over (path, size, mtime) of each file the archive holds and each link's target."""
    h = hashlib.sha256(f"{prefix}\n".encode())
    for rel in files(prefix):
        full = prefix / rel
        st = os.lstat(full)
        if full.is_symlink():
            h.update(f"L\0{rel}\0{os.readlink(full)}\n".encode())
        else:
            h.update(f"F\0{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:40]


def pack(prefix: Path, output: Path) -> int:
    """The interpreter at ``prefix`` as a plain tar at ``output``; its bytes unpacked."""
    total = 0
    with tarfile.open(output, "w", format=tarfile.PAX_FORMAT) as tar:
        for rel in files(prefix):
            info = tar.gettarinfo(str(prefix / rel), arcname=rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isreg():
                total += info.size
                with open(prefix / rel, "rb") as f:
                    tar.addfile(info, f)
            elif info.issym():
                tar.addfile(info)
    return total
