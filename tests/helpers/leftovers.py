"""The one "nothing left behind" check of the tests: no process of a job (or a devcluster), no
live YARN application, no staging directory. Each check returns what it still finds; the wait
fails naming all of it."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import psutil

# The states of an application that still holds (or will get) containers.
LIVE_APP_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHING")

Check = Callable[[], list]


def wait_nothing_left(timeout: float = 30, interval: float = 0.2, **checks: Check) -> None:
    """Waits until every check finds nothing (``timeout`` 0: looks once); fails naming what
    each check still found, e.g. ``left behind: apps [...], staging [...]``."""
    deadline = time.monotonic() + timeout
    while True:
        found = {name: check() for name, check in checks.items()}
        if not any(found.values()):
            return
        left = ", ".join(f"{name} {got}" for name, got in found.items() if got)
        assert time.monotonic() < deadline, f"left behind: {left}"
        time.sleep(interval)


def live_apps(apps: Iterable[dict], ids: Collection[str] | None = None) -> list[str]:
    """The ids of the applications (of ``ids``, when given) that are not over."""
    return [
        a["id"] for a in apps if (ids is None or a["id"] in ids) and a["state"] in LIVE_APP_STATES
    ]


def staged(names: Iterable[str], ids: Collection[str]) -> list[str]:
    """The staging directories (named by application id) of the applications ``ids``."""
    return [n for n in names if n in ids]


def processes_under(root: Path) -> list[psutil.Process]:
    """Live processes (not zombies) whose working directory or command line is under ``root``:
    a job's AM and executors under its TONY_JUPYTER_HOME, a devcluster's daemons."""
    found = []
    for p in psutil.process_iter(["cmdline", "cwd", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue  # exited; only its parent's bookkeeping is left
            cwd = p.info["cwd"] or ""
            cmd = " ".join(p.info["cmdline"] or [])
        except (psutil.Error, TypeError):
            continue
        if str(root) in cwd or str(root) in cmd:
            found.append(p)
    return found


def wait_cluster_clean(cluster, app_ids: Collection[str], timeout: float = 30) -> None:
    """Every application of ``app_ids`` ended, and left no staging directory, on ``cluster``
    (any view with ``apps()`` and ``staging()``: helpers/yarn.py's, helpers/secure.py's)."""
    wait_nothing_left(
        timeout,
        apps=lambda: live_apps(cluster.apps(), app_ids),
        staging=lambda: staged(cluster.staging(), app_ids),
    )
