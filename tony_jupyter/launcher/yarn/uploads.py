"""What this host uploaded to a cluster's HDFS caches (the ``--pack-env`` archives, the shipped
directories: staging.py), as HDFS described each file just after the upload: its length,
modification time and checksum (WebHDFS's GETFILECHECKSUM, which the DataNodes compute from the
bytes). A cached archive is used only if HDFS still describes it so: a task holds its user's
HDFS credentials and could overwrite ``envs/<hash>.tar.gz``, and every later job would then
unpack and run what it wrote. A content-addressed name is safe only checked against what was
put there.

Kept in ``$TONY_JUPYTER_HOME/hdfs-uploads.json`` (mode 600), keyed by the file's
``hdfs://namespace/path``. Best effort: a record lost or unwritable costs an upload, never a
job, and a file uploaded from another host (or before this record existed) is uploaded again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..client import home

log = logging.getLogger("tony_jupyter")
FILE = "hdfs-uploads.json"
MAX_RECORDS = 256  # the newest kept: a few archives per cluster


@dataclass(frozen=True)
class Upload:
    """A file as HDFS described it just after this host uploaded it."""

    length: int
    modified: int  # HDFS's modificationTime, ms
    checksum: dict[str, Any] | None  # GETFILECHECKSUM's FileChecksum; None if HDFS gives none

    def differs(self, now: Upload) -> str | None:
        """How ``now`` (the file as HDFS describes it now) is not this upload; None if it is."""
        if (now.length, now.modified) != (self.length, self.modified):
            return (
                f"{now.length} bytes modified at {now.modified}, where this host uploaded "
                f"{self.length} bytes at {self.modified}"
            )
        if self.checksum is not None and now.checksum != self.checksum:
            return "its HDFS checksum is not the one it had when this host uploaded it"
        return None


def _path() -> Path:
    return home() / FILE


def _read() -> dict[str, dict]:
    try:
        got = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def recorded(key: str) -> Upload | None:
    """What this host uploaded at ``key``, or None (nothing, or a damaged record)."""
    got = _read().get(key)
    if not isinstance(got, dict):
        return None
    length, modified, checksum = got.get("length"), got.get("modified"), got.get("checksum")
    if not isinstance(length, int) or not isinstance(modified, int):
        return None
    return Upload(length, modified, checksum if isinstance(checksum, dict) else None)


def record(key: str, upload: Upload) -> None:
    """Keep ``upload`` as what this host put at ``key`` (the newest ``MAX_RECORDS``)."""
    records = {k: v for k, v in _read().items() if k != key}
    records[key] = {"length": upload.length, "modified": upload.modified,
                    "checksum": upload.checksum}  # fmt: skip
    records = dict(list(records.items())[-MAX_RECORDS:])
    path = _path()
    part = path.with_name(f".{FILE}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(records, f)
        os.replace(part, path)
    except OSError as e:
        log.warning("not recorded: this host's upload to %s (%s): %s", key, path, e)
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
