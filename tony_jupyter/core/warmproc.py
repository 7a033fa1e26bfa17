"""Warm processes: an interpreter already started and imported, blocked reading its stdin until
it is handed a job as one JSON line (its environment, working directory, log file and arguments).

The kernel keeps one warm AM (launcher/localwarm.py); a warm AM keeps warm executors for the
job it will get (am/warmstart.py). A warm process is used only where it behaves as a fresh one
would: its environment is replaced wholesale, and what only matters when an interpreter starts
(``PYTHON*``, ``LD_*``, the locale, ``TZ``, ``MALLOC_*``) must be what it started with, or the
job starts a fresh process. A warm process whose parent goes away reads EOF and exits.
``TONY_JUPYTER_WARM=0`` turns them off.

One word names the idea in modules, classes and switches: *warm* (a ``WarmProcess`` here; the
``TONY_JUPYTER_WARM*`` switches; YARN's *warm AM*, a whole application started ahead, whose
warm executors wait in its containers). In comments and local names a warm process is also
"a spare" (``spares``: the warm processes a job may take), the noun for one such process.

A spare executor may also have imported its job's framework (TensorFlow, PyTorch, JAX: the
kernel's last job's) before the job came. Then what a framework reads as it is imported must be
what the task's would have been too (loadenv.py), and the task's cell must not set one of them
itself to another value: else the task starts in a fresh interpreter.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from . import supervise
from .loadenv import imports_as

SWITCH = "TONY_JUPYTER_WARM"
# Spares that import the framework ahead (each holds it in memory: ~0.8 GiB for TensorFlow);
# ``0`` keeps them warm without it.
IMPORT_SWITCH = "TONY_JUPYTER_WARM_IMPORT"
# YARN's warm AM (launcher/yarn/warmkeeper.py, am/yarn/warmapp.py) is opt-in: it holds containers
# of a shared cluster. Its value is how long an unused warm AM waits before it gives them back.
YARN_IDLE = "TONY_JUPYTER_WARM_YARN"
YARN_IDLE_DEFAULT_S = 600.0
# A spare executor in a YARN container: the warm AM it waits on, and its token there.
SPARE_URL, SPARE_TOKEN = "TONY_SPARE_URL", "TONY_SPARE_TOKEN"
# In a spare's environment from its start (so in /proc/<pid>/environ of it and of what it forks
# without exec): what finds a task's strays when the task ran in a spare (am/local.py).
SPARE_ID = "TONY_SPARE_ID"
_AT_START_PREFIXES = ("PYTHON", "LD_", "LC_", "MALLOC_")
_AT_START = ("LANG", "LANGUAGE", "TZ")
# The line that tells a spare to import its framework now: its parent's job has ended, so the
# import takes no CPU from a job's tasks.
IMPORT_NOW = {"import": True}
# The modules a spare imports for a framework (``spec.FRAMEWORKS``' names).
PRELOAD_MODULES = {
    "tensorflow": ("tensorflow",),
    "pytorch": ("torch", "torch.distributed", "torch.nn.parallel"),
    "jax": ("jax", "jax.numpy"),
}


def enabled(env: Mapping[str, str] = os.environ, switch: str = SWITCH) -> bool:
    return env.get(switch, "1").strip().lower() not in ("0", "false", "no", "off")


def at_start(env: Mapping[str, str]) -> dict[str, str]:
    """The variables an interpreter reads as it starts (or its runtime as it loads)."""
    return {k: v for k, v in env.items() if k.startswith(_AT_START_PREFIXES) or k in _AT_START}


@dataclass
class WarmProcess:
    proc: supervise.Process
    env: dict[str, str]  # what it started with
    id: str = ""
    used: bool = field(default=False)
    framework: str = ""  # what it imports while it waits ("": none)

    @classmethod
    def start(cls, argv: list[str], env: Mapping[str, str], framework: str = "") -> WarmProcess:
        spare_id = uuid.uuid4().hex
        start_env = dict(env, **{SPARE_ID: spare_id})
        proc = supervise.start(
            argv,
            env=start_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # its job's log comes with the job
            stderr=subprocess.DEVNULL,
            cwd="/",  # holds no directory busy; the job's cwd comes with the job
            own_group=True,  # as a fresh AM or executor is started
        )
        return cls(proc, start_env, spare_id, framework=framework)

    def fits(self, env: Mapping[str, str]) -> bool:
        fresh_alike = at_start(self.env) == at_start(env)
        if self.framework:  # imported under its start environment: the task's must match
            fresh_alike = fresh_alike and imports_as(self.framework, self.env, env)
        return fresh_alike and enabled(env) and not self.used and self.proc.poll() is None

    def hand(self, env: Mapping[str, str], cwd: str, log: str, args: list[str]) -> bool:
        """Give it its job (``args``: the command line's after ``-m MODULE``); False if it is
        gone (then start a fresh process)."""
        self.used = True
        umask = os.umask(0o077)  # read it: the only way; set back at once
        os.umask(umask)
        job = {"env": dict(env), "cwd": cwd, "log": log, "args": args, "umask": umask}
        line = json.dumps(job) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode())
            self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return self.proc.poll() is None

    def import_now(self) -> None:
        """Tell it to import its framework now (``preload``), then wait on for its job."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(IMPORT_NOW).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # gone, or handed a job already: a fresh process would import it too

    def close(self) -> None:
        """It reads EOF and exits."""
        self.used = True
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass


def preload(framework: str) -> None:
    """In a spare: import ``framework`` now, while no job waits on it. One that fails to import
    is left to the task, which reports it as a fresh process would."""
    import importlib

    for name in PRELOAD_MODULES.get(framework, ()):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the task's own import shows the error, in its log
            return


# How often a spare looks whether its parent is still there (end_with_parent).
PARENT_POLL_S = 0.25
_handed = threading.Event()  # in a spare: its job came (become), it is no spare any more
_PR_SET_PDEATHSIG = 1


def end_with_parent(signal_too: bool = False) -> None:
    """In a spare, as it starts: it ends within a moment of its parent, whoever else holds the
    write end of its stdin (a process the parent forked inherits it, and EOF never comes) and
    whatever it is doing (an import of TensorFlow reads no stdin for tens of seconds on a busy
    machine). A thread looks at its parent every ``PARENT_POLL_S``; ``signal_too``: Linux's
    parent-death signal as well (SIGKILL: a spare has nothing to clean up), which comes while
    an import holds the GIL, for a spare whose parent started it from its main thread (the
    signal follows the thread that forked it: a kernel's spare AM, started from a timer
    thread, would die with that thread). Both end once the spare is handed its job."""
    parent = os.getppid()
    if signal_too:
        _parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)  # gone already, before the signal was asked for

    def watch() -> None:
        while not _handed.is_set():
            if os.getppid() != parent:
                os._exit(0)
            time.sleep(PARENT_POLL_S)

    threading.Thread(target=watch, name="tony-spare-parent", daemon=True).start()


def _parent_death_signal(sig: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def wait_for_job(on_import: Callable[[], object] = lambda: None) -> dict | None:
    """In the spare: block until the job comes; None at EOF (the parent is gone). Told to
    import before (``WarmProcess.import_now``): ``on_import()``, and wait on."""
    while True:
        line = sys.stdin.buffer.readline()
        job = json.loads(line) if line.strip() else None
        if job != IMPORT_NOW:
            return job
        on_import()


def become(job: dict) -> None:
    """In the spare: become the process a fresh start would have made."""
    _handed.set()  # a job's process now: it lives as long as its job, not its parent
    _parent_death_signal(0)
    start_cwd = os.getcwd()
    os.environ.clear()  # wholesale: what the job's environment lacks is gone
    os.environ.update(job["env"])
    os.chdir(job["cwd"])
    os.umask(job.get("umask", 0o022))  # the parent's now, as a fresh child would inherit
    if sys.path and sys.path[0] in (start_cwd, ""):
        sys.path[0] = job["cwd"]  # as ``python -m`` started in the job's cwd puts it
    sys.argv = [sys.argv[0], *job["args"]]  # [0]: the module's path, as under ``-m``
    fd = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
