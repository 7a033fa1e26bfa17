"""A write that hit a quota or a full disk, worded: which path, which quota (or disk), and what
the user can do. Shared by the executor (checkpoints to HDFS) and the AM (history, logs)."""

from __future__ import annotations

import errno
import os
import re

from .errors import TonyError

_SPACE = re.compile(
    r"DiskSpace quota of (\S+) is exceeded: quota = (.+?) but diskspace consumed = (.+?)(?:\n|$)"
)
_NAMES = re.compile(
    r"NameSpace quota .*? of directory (\S+) is exceeded: quota=(\d+) file count=(\d+)"
)


class QuotaError(TonyError, OSError):
    """A write refused for a quota or a full disk (its message says what to do)."""


def worded(path: str, error: BaseException) -> str | None:
    """The message for ``error`` from writing ``path`` when it is a quota or a full disk."""
    text = str(error)
    if m := _SPACE.search(text):
        where, quota, needed = m.groups()
        return (
            f"writing {path} failed: the HDFS space quota of {where} is reached (quota "
            f"{quota}; the write needs {needed}, a whole block times its replication). Free "
            f"space under {where} (hdfs dfs -rm -r -skipTrash <old files>), or ask an HDFS "
            f"admin to raise it: hdfs dfsadmin -setSpaceQuota <bytes> {where}"
        )
    if m := _NAMES.search(text):
        where, quota, count = m.groups()
        return (
            f"writing {path} failed: the HDFS name quota of {where} is reached ({count} "
            f"files and directories, quota {quota}). Remove files under {where}, or ask an "
            f"HDFS admin to raise it: hdfs dfsadmin -setQuota <count> {where}"
        )
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"writing {path} failed: {os.strerror(error.errno)} (the disk or the user's "
            f"quota there is full). Free space on that disk, or set TONY_JUPYTER_HOME to a "
            f"directory on a disk with room"
        )
    return None
