"""``--pack-env``: the job's Python environment packed from a venv, uploaded once per content hash.

The venv is packed with venv-pack (a ``.tar.gz`` whose ``bin/python`` still links to the venv's
*base* interpreter, the ``home`` in ``pyvenv.cfg``: that interpreter must exist at the same path
on every node; the packed part is site-packages and the scripts). The archive is cached on HDFS
at ``/user/<user>/.tony-jupyter/envs/<hash>.tar.gz`` and localized as a YARN ARCHIVE named
``env`` in the AM's and every executor's container, which run ``env/bin/python``.

The content hash is over the venv's file list with each file's size and mtime (and each
symlink's target), ``__pycache__`` left out: it reads no file's content, so it takes well under a
second for a large venv. Any install, upgrade or edit in the venv changes it; merely running
Python in it (which writes ``__pycache__``) does not. Only venvs (``python -m venv`` /
virtualenv: a ``pyvenv.cfg`` at the root) are supported; conda environments are not.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from ...errors import BackendError, SpecError

ENV_NAME = "env"  # the ARCHIVE's link name in the container
PYTHON = f"{ENV_NAME}/bin/python"
SKIP_DIRS = {"__pycache__"}


def venv_root(path: str | None) -> Path:
    """The venv at ``path`` (default: this kernel's, ``sys.prefix``), or a SpecError."""
    raw = path or sys.prefix
    p = Path(raw).expanduser()
    if not p.is_dir():
        raise SpecError(f"--pack-env {raw}: no such directory; name a venv (python -m venv)")
    p = p.resolve()
    if not (p / "pyvenv.cfg").is_file():
        conda = " (it looks like a conda environment)" if (p / "conda-meta").is_dir() else ""
        raise SpecError(
            f"--pack-env {raw}: not a venv, no pyvenv.cfg in {p}{conda}. --pack-env packs a "
            "virtual environment made by `python -m venv` or virtualenv; conda environments are "
            "not supported. Or leave it out and use --python PATH for a Python already on the "
            "cluster's nodes"
        )
    return p


def content_hash(prefix: Path) -> str:
    """sha256 over (relative path, size, mtime) of every file and (path, target) of every link."""
    h = hashlib.sha256()
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
    return h.hexdigest()[:40]


def pack(prefix: Path, output: Path) -> None:
    """``prefix`` packed into ``output`` (.tar.gz) with venv-pack, ``__pycache__`` left out."""
    try:
        import venv_pack
    except ImportError:
        raise BackendError(
            "--pack-env needs the venv-pack package in the kernel's environment: "
            "pip install venv-pack"
        ) from None
    try:
        venv_pack.pack(
            prefix=str(prefix),
            output=str(output),
            format="tar.gz",
            filters=[("exclude", "*/__pycache__/*")],
            force=True,
            verbose=False,
        )
    except venv_pack.VenvPackException as e:
        # e.g. editable installs (pip install -e): their code is outside the venv.
        raise BackendError(f"--pack-env {prefix}: venv-pack cannot pack it: {e}") from None
