"""The kernel's spare AM (core/warmproc.py): after a local job started, one AM process is
started, imported and waiting, with spare executors for as many tasks as that job had, which
import that job's framework (am/warmstart.py); the next job is handed to it instead of starting an
interpreter; their import starts once that job has ended, so it takes no CPU from the job's
tasks. The first one is started when the extension loads (``on_load``), with spare
executors that import no framework yet. It dies with the kernel (its stdin is a pipe from
here). ``TONY_JUPYTER_WARM=0`` turns it off; ``TONY_JUPYTER_WARM_ON_LOAD=0`` only the one at
load."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from ..core import hostenv
from ..core import warmproc as warm
from ..core.jobdir import JobDir
from ..core.spec import JobSpec

# After a job started: its own tasks have the CPU first, then the spare starts.
START_DELAY_S = 0.5
# How often a spare waiting to import checks whether the job before it has ended.
IMPORT_POLL_S = 0.25
# The spare executors started as the extension loads (its value; 0: none, and no spare AM).
ON_LOAD = "TONY_JUPYTER_WARM_ON_LOAD"
ON_LOAD_EXECUTORS = 2

_lock = threading.Lock()
_starting = threading.Lock()  # one start at a time (a timer's and a direct call's)
_generation = 0  # a timer set before the last discard() starts nothing
_spare: warm.WarmProcess | None = None
_spare_like: tuple = ()  # what the waiting one was started for (``_like``)
_timer: threading.Timer | None = None


def _like(tasks: int, spec: JobSpec | None) -> tuple:
    """What decides a spare AM's spare executors: how many, and what they import under which
    environment (am/warmstart.py's ``plan``)."""
    if spec is None:
        return (tasks,)
    shape = tuple((t.type, t.instances, t.gpus) for t in spec.tasks)
    env = tuple(sorted(dict(spec.env).items()))
    job = (spec.framework, spec.legacy_keras, spec.procs_per_task, spec.min_workers)
    return (tasks, job, shape, env)


def take(env: dict[str, str]) -> warm.WarmProcess | None:
    """The spare, if a fresh AM started now would be the same process; else None (and a spare
    that does not fit is let go)."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is None:
        return None
    if spare.fits(env):
        return spare
    spare.close()
    return None


def replenish(
    tasks: int,
    like: JobSpec | None = None,
    delay: float = START_DELAY_S,
    after: Path | None = None,
) -> threading.Timer | None:
    """Start the next spare (with ``tasks`` spare executors, which import the framework of job
    ``like`` once the job in directory ``after`` has ended) in ``delay`` seconds."""
    global _timer
    if not warm.enabled():
        return None
    with _lock:
        if _timer is not None:
            _timer.cancel()
        _timer = threading.Timer(delay, start, (tasks, like, _generation, after))
        _timer.daemon = True
        _timer.start()
        return _timer


def on_load() -> threading.Timer | None:
    """As the extension loads (for a kernel whose jobs run locally): a spare AM for its first
    job, started in the background (a kernel that never runs a job pays its idle processes: see
    the README)."""
    try:
        executors = int(os.environ.get(ON_LOAD, ON_LOAD_EXECUTORS))
    except ValueError:
        executors = ON_LOAD_EXECUTORS
    if executors <= 0:
        return None
    return replenish(executors, None, delay=0.0)


def start(
    tasks: int,
    spec: JobSpec | None = None,
    generation: int | None = None,
    after: Path | None = None,
) -> None:
    """Start a spare AM now with ``tasks`` spare executors, like ``spec``'s tasks (unless one
    that fits waits); they import its framework at once, or once the job in ``after`` ended."""
    with _starting:
        spare = _start(tasks, spec, generation)
    if spare is None or spec is None or not warm.enabled(switch=warm.IMPORT_SWITCH):
        return
    if after is None:
        spare.import_now()
    else:
        threading.Thread(target=_import_when_ended, args=(spare, after), daemon=True).start()


def _import_when_ended(spare: warm.WarmProcess, job_dir: Path) -> None:
    """Tell ``spare`` to import once the job in ``job_dir`` has ended (its AM wrote the job's
    history; or its directory is gone): the import's CPU is not taken from that job's tasks.
    Nothing if the spare was taken or let go meanwhile."""
    files = JobDir(job_dir)
    while files.spec.exists() and not files.history.exists():
        if current() is not spare:
            return
        time.sleep(IMPORT_POLL_S)
    if current() is spare:
        spare.import_now()


def _start(tasks: int, spec: JobSpec | None, generation: int | None) -> warm.WarmProcess | None:
    global _spare, _spare_like
    env = hostenv.without_jupyter(os.environ)  # as launcher/local.py starts an AM
    if not warm.enabled(env):
        return None
    like = _like(tasks, spec)
    with _lock:
        if generation is not None and generation != _generation:
            return None  # discarded since
        if _spare is not None and _spare.fits(env) and _spare_like == like:
            return None  # the one waiting will do (told to import already, or about to be)
        old, _spare = _spare, None
    if old is not None:
        old.close()
    argv = [sys.executable, "-m", "tony_jupyter.am", "--spare", str(tasks)]
    spare = warm.WarmProcess.start(argv + [spec.to_json()] if spec is not None else argv, env)
    with _lock:
        old, _spare, _spare_like = _spare, spare, like
    if old is not None:
        old.close()
    return spare


def current() -> warm.WarmProcess | None:
    """The spare waiting now, if any."""
    with _lock:
        return _spare


def discard() -> None:
    """Let the spare go (it exits), and start no other."""
    global _spare, _timer, _generation
    with _starting, _lock:
        spare, _spare = _spare, None
        timer, _timer = _timer, None
        _generation += 1
    if timer is not None:
        timer.cancel()
    if spare is not None:
        spare.close()
