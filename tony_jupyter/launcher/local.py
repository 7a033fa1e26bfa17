"""The local backend: stage the bundle into the job dir and start the AM as a detached process;
and the client of such a job, which finds its AM through ``am.json`` and its process id."""

from __future__ import annotations

import contextlib
import os
import sys
import time

import psutil

from ..core import hostenv, jobdir, shards, srcdir, supervise
from ..core.aminfo import AmInfo, AmInfoError
from ..core.bundle import Bundle, BundleInfo
from ..core.errors import SpecError
from ..core.protocol import JobSnapshot, new_token
from ..core.spec import JobSpec
from . import localwarm as spare_am
from . import outcome
from .client import JobClient, JobRecord, new_job_id, pid_alive

AM_START_TIMEOUT_S = 30.0
TASKS_PER_CORE, MIN_TASKS = 4, 8


def stage(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    # The token not in the job's directory, the tasks' bundle: the AM is given its verifier.
    record = JobRecord.create(new_job_id(), new_token())
    d, files = record.dir, record.layout
    try:
        files.cell.write_text(bundle.source)
        files.names.write_bytes(bundle.names)
        if bundle.src is not None:
            # The job's own copy, not the directory itself: what the tasks see is what was
            # there at submission (as on YARN), and what they write stays out of it.
            # In the job's directory: the tasks' working directory (executor/cell.py).
            srcdir.copy_into(bundle.src, files.src)
        manifest = shards.write(bundle.shards, d) if bundle.shards is not None else None
        files.bundle.write_text(BundleInfo.of(spec.pull, bundle, argv, manifest).dumps())
        files.env.touch(mode=0o600)  # the variables' values, the AM's only
        files.env.write_text(spec.env_json())
        record.write_spec(spec)
    except BaseException:
        record.remove()
        raise
    return record


def start_am(record: JobRecord, spares_like: JobSpec | None = None) -> None:
    """Start the AM (in the kernel's spare AM where there is one that fits: launcher/localwarm.py)
    and wait until it serves, then (given ``spares_like``) have the next spare made ready for a
    job like it; on any failure, a Ctrl-C among them, leave nothing behind."""
    d, files = record.dir, record.layout
    argv = [sys.executable, "-m", "tony_jupyter.am", str(d)]
    env = hostenv.without_jupyter(os.environ)  # the AM's, and so its tasks'
    spare = spare_am.take(env)
    if spare is not None and spare.hand(env, str(d), str(files.am_log), [str(d)]):
        proc = spare.proc
    else:
        # Its own session: the AM survives the kernel (and Ctrl-C in it).
        proc = supervise.start(argv, env=env, log=files.am_log, cwd=d)
    try:
        files.am_pid.write_text(str(proc.pid))
        outcome.started(await_am(proc, files))
        if spares_like is not None:
            n = sum(t.instances for t in spares_like.tasks)
            spare_am.replenish(n, spares_like, after=record.dir)
    except BaseException:  # includes KeyboardInterrupt: leave no AM, task or job dir
        # A spare AM may have handed the job's tasks to its executors already: each in its own
        # group, and ending only once its heartbeats to the killed AM fail (seconds): KILL them.
        family = _descendants(proc.pid)
        proc.kill_now()
        for p in family:
            with contextlib.suppress(psutil.Error):
                p.kill()
        record.remove()
        raise


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def await_am(proc: supervise.Process, files: jobdir.JobDir) -> outcome.Outcome:
    """How the AM's start came out: Started once it wrote ``am.json`` (it serves), or why not."""
    if proc.wait_ready(supervise.file_exists(files.am_info), AM_START_TIMEOUT_S, interval=0.02):
        return outcome.Started()
    if proc.poll() is not None:
        tail = files.am_log.read_text(errors="replace")[-2000:]
        return outcome.AmExited(code=proc.returncode, log_tail=tail)
    return outcome.TimedOut(AM_START_TIMEOUT_S, log=files.am_log)


def check_capacity(spec: JobSpec, cores: int | None = None, memory_mb: int | None = None) -> None:
    """The local backend starts ``--procs-per-task`` processes per task on this machine (one by
    default): refuse, before anything starts, an ask this machine cannot hold."""
    cores = cores or os.cpu_count() or 1
    memory_mb = memory_mb or psutil.virtual_memory().total >> 20
    tasks = sum(t.instances for t in spec.tasks)
    procs = tasks * spec.procs_per_task
    most = max(MIN_TASKS, TASKS_PER_CORE * cores)
    if procs > most:
        asks = (
            f"{tasks} tasks, one process each"
            if spec.procs_per_task == 1
            else f"{procs} processes ({tasks} task{'s' * (tasks > 1)} × --procs-per-task "
            f"{spec.procs_per_task})"
        )
        raise SpecError(
            f"--backend local: the job asks for {asks}, on this machine with {cores} cores; at "
            f"most {most} run here ({TASKS_PER_CORE} per core). Use fewer (--workers N, "
            "--procs-per-task N), or a cluster (--backend yarn)"
        )
    asked = sum(t.instances * t.memory_mb for t in spec.tasks)
    if asked > memory_mb:
        raise SpecError(
            f"--backend local: the job asks for {asked / 1024:.1f} GB of memory ({tasks} tasks), "
            f"this machine has {memory_mb / 1024:.1f} GB; ask less per task (e.g. --memory 512m) "
            "or use fewer tasks"
        )


def submit(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    check_capacity(spec)
    record = stage(spec, bundle, argv)
    start_am(record, spares_like=spec)
    return record


class LocalJobClient(JobClient):
    """A job whose AM runs on this host: it writes its address to ``am.json`` when it serves,
    and its final status, events, logs and result into the job's directory."""

    def am_url(self) -> str | None:
        info = self.am_info()
        return info.url if info and pid_alive(info.pid) else None

    def am_info(self) -> AmInfo | None:
        """Where the AM serves (``am.json``); None when it does not, or the file is damaged
        (then noted: the job is shown from what its AM left)."""
        try:
            return AmInfo.read(self.record.layout.am_info)
        except AmInfoError as e:
            self.record.note_damage(jobdir.AM_INFO, e.why)
            return None

    def lost_snapshot(self, spec: dict) -> JobSnapshot:
        return JobSnapshot.lost(
            self.job_id,
            spec,
            "the AM is gone and left no final status (killed, or its host died)",
        )

    def am_pid(self) -> int:
        try:
            return int(self.record.layout.am_pid.read_text())
        except (FileNotFoundError, ValueError):
            return 0

    def wait_am_exit(self, timeout: float = 15) -> bool:
        pid = self.am_pid()
        deadline = time.monotonic() + timeout
        while pid and pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not (pid and pid_alive(pid))
