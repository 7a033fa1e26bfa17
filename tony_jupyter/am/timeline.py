"""The YARN AM's start, step by step, in its own log: one stamped line per step on stderr (its
container's ``am.stderr``, beside its JVM's stamped lines), with the seconds since the AM's
process started, so a slow start can be read from the log alone; ``bench/yarn_startup.py``
gathers them (:func:`parse`). Only in a YARN container (the NodeManager sets CONTAINER_ID): a
local AM's log, whose tail a failed start shows, stays as it was.

Kept to the standard library: it is imported before anything else of the AM.
"""

from __future__ import annotations

import os
import sys
import time

PREFIX = "tony-jupyter AM start:"


def process_started() -> float | None:
    """When this process started, as ``time.time()`` counts (the kernel's 10 ms ticks): its
    start in /proc against the uptime now. None where there is no /proc."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


ON = "CONTAINER_ID" in os.environ
STARTED = process_started() if ON else None


def mark(step: str) -> None:
    """``step`` done now: a line on stderr, ``<date time,ms> INFO tony-jupyter AM start: +S.SSS s
    <step> @<epoch>`` (S: seconds since the process started)."""
    if not ON:
        return
    now = time.time()
    since = f"+{now - STARTED:.3f} s" if STARTED is not None else "+? s"
    print(f"{_stamp(now)} INFO {PREFIX} {since} {step} @{now:.3f}", file=sys.stderr, flush=True)


def note(text: str) -> None:
    """A stamped line beside the steps, not one of them (what a step found, e.g.)."""
    if ON:
        print(f"{_stamp(time.time())} INFO tony-jupyter AM: {text}", file=sys.stderr, flush=True)


def _stamp(now: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now % 1 * 1000):03d}"


def parse(text: str) -> dict[str, float]:
    """The steps a log's lines mark, each with its epoch time; ``process`` for the process's
    start (from the first line's offset)."""
    steps: dict[str, float] = {}
    for line in text.splitlines():
        if PREFIX not in line:
            continue
        since, _, rest = line.split(PREFIX, 1)[1].strip().partition(" s ")
        step, _, at = rest.rpartition(" @")
        try:
            when = float(at)
        except ValueError:
            continue
        if "process" not in steps and since.startswith("+") and since[1:] != "?":
            steps["process"] = when - float(since[1:])
        steps.setdefault(step, when)
    return steps
