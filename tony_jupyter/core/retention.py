"""How long job history is kept: ``TONY_JUPYTER_HISTORY_DAYS`` (default 30, as TonY's portal
keeps its jobs), read by the notebook side (local jobs) and handed to each YARN AM (entries on
HDFS). The server extension's ``c.TonyJupyter.history_days`` sets it for its kernels."""

from __future__ import annotations

import os

DAYS_ENV = "TONY_JUPYTER_HISTORY_DAYS"
DEFAULT_DAYS = 30.0


def days() -> float:
    """The retention in days; a value that is not a positive number means the default."""
    try:
        value = float(os.environ.get(DAYS_ENV) or DEFAULT_DAYS)
    except ValueError:
        return DEFAULT_DAYS
    return value if value > 0 else DEFAULT_DAYS
