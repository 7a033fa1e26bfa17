"""LocalProvider: one executor process per task on this machine.

Each executor is a ``supervise.Process`` in its own group (a fresh one, or a spare's: warmproc.py);
a task is stopped by TERM to its group, then KILL after ``STOP_GRACE_S`` from ``poll``, so
that the AM's loop never blocks on one task (``supervise.Process.stop`` would wait).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..core import hostenv, supervise
from ..core import warmproc as warm
from ..core.jobdir import JobDir
from ..core.protocol import ExecutorEnv
from ..core.spec import JobSpec, TaskSpec
from .provider import Placement, Provider

STOP_GRACE_S = 3.0
HOST = "127.0.0.1"  # every local task's host: its executor and what it serves listen here


def gpu_devices(first: int, gpus: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a task given ``gpus`` GPUs from the ``first``'th on."""
    return ",".join(map(str, range(first, first + gpus)))


def first_attempt_gpus(spec: JobSpec) -> list[str | None]:
    """Each task's ``CUDA_VISIBLE_DEVICES`` (None: not set) as ``LocalProvider.launch`` gives
    them to a first attempt, in the order the coordinator launches its tasks."""
    out: list[str | None] = []
    first = 0
    for t in spec.tasks:
        for _ in range(t.instances):
            out.append(gpu_devices(first, t.gpus) if t.gpus else None)
            first += t.gpus
    return out


def _kill_strays(markers: list[dict[str, str]]) -> None:
    """Kill what a task left running that escaped its process group (fork, setsid, fork) and
    its executor's reaping (a task killed outright): they carry the task's ``TONY_*`` env in
    ``/proc/<pid>/environ``, the environment they were exec'd with. A task run in a spare
    executor has its spare's instead (set at the spare's start), which its forks inherit: so
    any one of ``markers`` found whole marks a stray."""
    markers = [m for m in markers if m]
    if not markers:
        return
    import psutil  # at a task's end: the AM's start does not wait for it

    for p in psutil.process_iter(["environ"]):
        env = p.info.get("environ") or {}
        if any(all(env.get(k) == v for k, v in m.items()) for m in markers):
            try:
                p.kill()
            except psutil.Error:
                pass


class LocalProvider(Provider):
    def __init__(
        self,
        job_dir: Path,
        python: str = sys.executable,
        spares: list[warm.WarmProcess] | None = None,
    ):
        self.job_dir, self.python = job_dir, python
        self.spares = list(spares or [])  # warmproc.py: tasks start in these first
        self.procs: dict[tuple[str, int], supervise.Process] = {}
        self._gpu_next = 0
        self._kill_at: dict[tuple[str, int], float] = {}
        self._markers: dict[tuple[str, int], list[dict[str, str]]] = {}

    def launch(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> None:
        # Without the Jupyter server's variables, also where an AM was started some other way,
        # nor the notebook side's own (hostenv.NOT_FOR_TASKS) unless the job asks for them.
        full_env = hostenv.for_task(os.environ, env)
        full_env[hostenv.RUNTIME_DIR] = hostenv.private_runtime_dir(self.job_dir)
        full_env[ExecutorEnv.var("bundle_dir")] = str(self.job_dir)
        full_env[ExecutorEnv.var("executor_host")] = HOST
        if task.gpus:
            full_env["CUDA_VISIBLE_DEVICES"] = gpu_devices(self._gpu_next, task.gpus)
            self._gpu_next += task.gpus
        out = JobDir(self.job_dir).stdout(attempt, task_id)
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [self.python, "-m", "tony_jupyter.executor"]
        job = full_env.get(ExecutorEnv.var("job_id"), "")
        markers = [
            {
                ExecutorEnv.var("job_id"): job,
                ExecutorEnv.var("task_id"): task_id,
                ExecutorEnv.var("attempt"): str(attempt),
            }
        ]
        spare = self._spare_for(full_env)
        if spare is not None and spare.hand(full_env, str(self.job_dir), str(out), []):
            proc = spare.proc
            markers.append({warm.SPARE_ID: spare.id})
        else:
            proc = supervise.start(argv, env=full_env, log=out, cwd=self.job_dir)
        self.procs[(task_id, attempt)] = proc
        self._markers[(task_id, attempt)] = markers

    def placement(self, task_id: str, attempt: int) -> Placement | None:
        return Placement(HOST) if (task_id, attempt) in self.procs else None

    def _spare_for(self, env: dict[str, str]) -> warm.WarmProcess | None:
        if self.python != sys.executable:
            return None
        for spare in self.spares:
            if spare.fits(env):
                return spare
        return None

    def drop_spares(self) -> None:
        """The spares no task took read EOF and exit (reaped at shutdown)."""
        for spare in self.spares:
            if not spare.used:
                spare.close()

    def poll(self) -> None:
        for (task_id, attempt), proc in list(self.procs.items()):
            code = proc.poll()
            kill_at = self._kill_at.get((task_id, attempt))
            if code is None and kill_at and time.monotonic() > kill_at:
                # A stopped (SIGSTOP) or stubborn process ignores SIGTERM; SIGKILL does not wait.
                proc.signal(signal.SIGKILL)
            if code is not None:
                proc.signal(signal.SIGKILL)  # reap what the executor left in its group
                _kill_strays(self._markers.pop((task_id, attempt), []))
                del self.procs[(task_id, attempt)]
                self._kill_at.pop((task_id, attempt), None)
                why = f"killed by signal {-code}" if code < 0 else ""
                self.on_exit(task_id, attempt, code if code >= 0 else 128 - code, why)

    def stop_task(self, task_id: str, attempt: int) -> None:
        proc = self.procs.get((task_id, attempt))
        if proc is not None and proc.poll() is None:
            proc.signal(signal.SIGTERM)
            self._kill_at[(task_id, attempt)] = time.monotonic() + STOP_GRACE_S

    def drain(self) -> None:
        self.shutdown()  # every task stopped before the history is written; again is a no-op

    def shutdown(self) -> None:
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            proc.kill_now()  # and what the executor left in its group
        self.poll()
        for spare in self.spares:
            spare.close()
            try:
                spare.proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                spare.proc.kill_now()
