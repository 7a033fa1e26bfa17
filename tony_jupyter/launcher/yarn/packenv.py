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
(``LEFT_OUT``), so a change of those rules makes a new archive.

The archive leaves out ``__pycache__`` and TensorFlow's C++ headers (``tensorflow/include``:
18,500 of the 22,000 files of a TensorFlow install, 430 MB unpacked), which only a build of a
custom op reads. Files, not bytes, are what a NodeManager's unpacking costs most where Hadoop's
native library is missing: it sets each unpacked file's permissions with one ``chmod`` process
per file (a few milliseconds each). Only venvs (``python -m venv`` /
virtualenv: a ``pyvenv.cfg`` at the root) are supported; conda environments are not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import os
import socket
import sys
from pathlib import Path

import psutil

from ...errors import BackendError, SpecError
from ...spec import JobSpec

ENV_NAME = "env"  # the ARCHIVE's link name in the container
PYTHON = f"{ENV_NAME}/bin/python"
SKIP_DIRS = {"__pycache__"}
# venv-pack's fnmatch patterns over paths in the venv: never in the archive.
LEFT_OUT = ("*/__pycache__/*", "*/site-packages/tensorflow/include/*")


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


def venv_version(root: Path) -> str | None:
    """The venv's minor Python version (``3.11``), from its ``pyvenv.cfg``; None if unsaid."""
    try:
        lines = (root / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            parts = value.strip().split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return f"{parts[0]}.{parts[1]}"
    return None


def content_hash(prefix: Path) -> str:
    """sha256 over (relative path, size, mtime) of every file and (path, target) of every link."""
    h = hashlib.sha256("\0".join(LEFT_OUT).encode() + b"\n")
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
    """``prefix`` packed into ``output`` (.tar.gz) with venv-pack, ``LEFT_OUT`` left out."""
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
            filters=[("exclude", pattern) for pattern in LEFT_OUT],
            force=True,
            verbose=False,
        )
    except venv_pack.VenvPackException as e:
        # e.g. editable installs (pip install -e): their code is outside the venv.
        raise BackendError(f"--pack-env {prefix}: venv-pack cannot pack it: {e}") from None


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
