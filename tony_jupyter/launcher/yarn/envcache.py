"""Packed environments (``--pack-env``) and their base interpreters (interpreter.py) kept on
this host by content hash, so that a venv or an interpreter packed once is not packed again for
another cluster, or after a cluster's HDFS cache was cleared: packing a TensorFlow venv takes one
to several minutes, an interpreter several seconds; copying an archive, a second.

In ``$XDG_CACHE_HOME/tony-jupyter/<kind>`` (default ``~/.cache``; kinds ``envs`` and
``pythons``), readable by the user only, the ``KEEP`` most recently used archives of each kind,
as each is tens of MB to several GB. Best effort: a cache that cannot be written (a full disk)
costs a packing, never the job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
from pathlib import Path

log = logging.getLogger("tony_jupyter")

KEEP = 2  # of each kind
ENVS = "envs"  # packed venvs
PYTHONS = "pythons"  # their base interpreters


def directory(kind: str = ENVS) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tony-jupyter" / kind


def fetch(digest: str, dest: Path, kind: str = ENVS) -> bool:
    """Puts the archive of ``digest`` at ``dest`` if this host keeps it; whether it did."""
    src = directory(kind) / f"{digest}.tar.gz"
    try:
        _link_or_copy(src, dest)
        os.utime(src)  # most recently used
    except OSError:
        return False
    return True


def keep(digest: str, packed: Path, kind: str = ENVS) -> None:
    """Keeps ``packed`` as the archive of ``digest``, and only the ``KEEP`` latest of ``kind``."""
    d = directory(kind)
    part = d / f".{digest}.{secrets.token_hex(4)}.part"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        _link_or_copy(packed, part)
        os.replace(part, d / f"{digest}.tar.gz")
    except OSError as e:
        log.warning("not kept for later jobs: the packed %s archive (%s): %s", kind, d, e)
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
        return
    kept = sorted(d.glob("*.tar.gz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[KEEP:]:
        old.unlink(missing_ok=True)


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)  # instant on one filesystem
    except OSError:
        if not src.is_file():
            raise
        shutil.copyfile(src, dest)
