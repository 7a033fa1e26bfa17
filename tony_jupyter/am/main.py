"""The Application Master (its command line, ``python -m tony_jupyter.am JOB_DIR``: cli.py).

One program for every backend: a Coordinator plus a Provider, serving the job's HTTP API.
It outlives the kernel that started it; after the job ends it lingers until a client has
released it (or ``tony.am.linger-sec`` passes), so results and logs can still be fetched.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

from ..core import quota
from ..core.aminfo import AmInfo
from ..core.jobdir import TENSORBOARD, JobDir
from ..core.protocol import TERMINAL_JOB_STATES, ExecutorEnv, JobState
from ..core.spec import JobSpec
from . import historyrecord as history
from . import timeline
from .coordinator import Coordinator
from .provider import Provider

TICK_MS = 200
# Connections not yet accepted, per listening socket (the kernel caps it at somaxconn): a
# large job's executors connect in a burst, and a connection the queue drops waits for TCP's
# SYN retries (1 s, 3 s, 7 s, ...), longer than the missed-heartbeat limit at 10,000 tasks.
BACKLOG = 4096


def executor_env(job_id: str, spec: JobSpec, url: str, job_dir: Path) -> dict:
    env = ExecutorEnv(
        job_id=job_id,
        am_url=url,
        chief=spec.chief_id,
        heartbeat_ms=spec.heartbeat_interval_ms,
        max_missed=spec.max_missed_heartbeats,
        am_lost_s=spec.am_lost_s,
        checkpoint_dir=str(JobDir(job_dir).checkpoints),
        # Relative: each executor resolves it against its own cwd (executor/main.py). On YARN
        # that is the task's container, where the chief's TensorBoard reads; the AM's dir is
        # another container, maybe on another node.
        tensorboard_dir=TENSORBOARD if spec.backend == "yarn" else str(JobDir(job_dir).tensorboard),
        tensorboard=spec.tensorboard,
        session=spec.session,
        framework=spec.framework,
        procs_per_task=spec.procs_per_task,
        min_workers=spec.min_workers,
        max_workers=spec.task("worker").instances if spec.elastic else 0,
        max_attempts=spec.max_attempts,
    ).to_env()
    # Each task's own: set by the provider (the registration secret: by the coordinator).
    for unset in ("token", "task_id", "attempt", "bundle_dir"):
        env.pop(ExecutorEnv.var(unset))
    env["PYTHONUNBUFFERED"] = "1"
    if spec.legacy_keras and spec.framework == "tensorflow":
        # tf.keras code from TensorFlow's multi-worker tutorials needs Keras 2 (tf-keras):
        # Keras 3 fails under MultiWorkerMirroredStrategy (see README, "Keras versions").
        env["TF_USE_LEGACY_KERAS"] = "1"
    # TONY_* are the AM's to set (a spec from an older client could still carry one).
    mine = ExecutorEnv.PREFIX
    env.update({k: v for k, v in dict(spec.env).items() if not k.upper().startswith(mine)})
    return env


def job_token_verifier(job_dir: Path) -> str:
    """The job token's SHA-256, from ``token.sha256`` (what a launcher writes: the AM is never
    given the token itself, nor keeps it where a task could read it)."""
    return JobDir(job_dir).token_verifier.read_text().strip()


class AM:
    def __init__(
        self,
        job_dir: Path,
        provider: Provider,
        host: str = "127.0.0.1",
        advertise: str | None = None,
        listening: tuple | None = None,
    ):
        self.job_dir = job_dir
        self.spec = JobSpec.read(job_dir)
        self.verifier = job_token_verifier(job_dir)
        self.job_id = os.environ.get(ExecutorEnv.var("job_id")) or job_dir.name
        self.provider, self.host = provider, host
        # A warm YARN AM (yarn/warmapp.py) serves already: its socket, URL, server and router.
        self.warm_server = listening[2:] if listening else None
        if listening:
            self.socket, self.url = listening[0], listening[1]
        else:
            # Listening before tornado is even imported: executors started meanwhile (run())
            # wait in the socket's backlog, not in a failed connect.
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, 0))
            self.socket.listen(BACKLOG)
            self.socket.setblocking(False)
            self.url = f"http://{advertise or host}:{self.socket.getsockname()[1]}"
        self.port = self.socket.getsockname()[1]
        env = executor_env(self.job_id, self.spec, self.url, job_dir)
        self.coordinator = Coordinator(self.job_id, self.spec, job_dir, provider, env)
        self.launched = False
        self._frozen = False  # gc.freeze() done (_tick)
        self._loop: Any = None  # the running loop, once run() started
        self._early_exits: list[tuple] = []  # exits reported before the event loop ran
        self._exits_lock = threading.Lock()

    def launch(self) -> None:
        """Start the tasks, before the event loop and the server are even imported: the
        executors' interpreters start while this one imports tornado (``run`` serves them;
        meanwhile they wait in the listening socket's backlog)."""

        def on_exit(*a) -> None:  # from any thread (YARN's callbacks)
            with self._exits_lock:
                if self._loop is None:
                    self._early_exits.append(a)
                    return
            self._loop.call_soon_threadsafe(self.coordinator.on_exit, *a)

        self.provider.bind(on_exit)
        self.provider.start(self.url)
        recovered = self.provider.recovered_events()
        if recovered:
            self.coordinator.recover(recovered)
        self.coordinator.start()
        self.launched = True

    def _serve(self) -> None:
        """The HTTP API and the heartbeat streams, on the running loop."""
        from tornado import httpserver

        from .api import AMState, make_app

        self.state = AMState(self.coordinator, self.verifier)
        if self.spec.session:
            from .sessioncells import CellQueue

            self.state.cells = CellQueue(self.coordinator)
        if self.warm_server:
            self.server, switch = self.warm_server
            switch.target = make_app(self.state)  # the same socket, now the job's API
            return
        self.server = httpserver.HTTPServer(make_app(self.state))
        self.server.add_sockets([self.socket])

    def _tick(self) -> None:
        self.coordinator.tick()
        if self.coordinator.state == JobState.RUNNING and not self._frozen:
            # What the job's start made (tasks, tokens, connections) lives as long as the job:
            # out of the collector's full passes, which at 5,000 tasks took 0.2-0.6 s each,
            # with the event loop (every heartbeat) stopped.
            gc.freeze()
            self._frozen = True
        if self.state.cells is not None:
            self.state.cells.tick()

    async def _keep_history(self, loop) -> None:
        """Once the tasks are gone: the history files, then the provider keeps them (YARN:
        on HDFS, while the AM still holds its tokens and before staging goes)."""
        import asyncio

        try:
            await loop.run_in_executor(None, self.provider.drain)
            await asyncio.sleep(0.05)  # the exits the drain caused
            self.coordinator.write_status()
            history.write(self.job_dir, self.coordinator)
            JobDir(self.job_dir).env.unlink(missing_ok=True)  # the job's record keeps names
            await loop.run_in_executor(None, self.provider.keep_history, self.job_dir)
        except Exception as e:  # noqa: BLE001 - the job's end never fails over its history
            why = quota.worded(str(self.job_dir), e) or repr(e)
            print(f"tony-jupyter AM: history not kept: {why}", flush=True)
        finally:  # now the job is reported ended (JobSnapshot.history_pending)
            self.coordinator.history_kept = True
            self.coordinator.changed()

    async def run(self) -> int:
        import asyncio

        if not self.launched:
            self.launch()
        loop = asyncio.get_running_loop()
        with self._exits_lock:
            self._loop = loop
            for a in self._early_exits:
                loop.call_soon(self.coordinator.on_exit, *a)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(
                sig,
                lambda *_: loop.call_soon_threadsafe(
                    self.coordinator.kill, "the AM was sent a signal"
                ),
            )
        self._serve()
        from .beats import serve_beats

        beats = await serve_beats(self.state, self.host)
        timeline.mark("serving the job's API")
        from tornado.ioloop import PeriodicCallback

        AmInfo(
            url=self.url,
            pid=os.getpid(),
            port=self.port,
            started=time.time(),
            job_id=self.job_id,
            backend=self.spec.backend,
        ).write(JobDir(self.job_dir).am_info)
        ticker = PeriodicCallback(self._tick, TICK_MS)
        ticker.start()
        try:
            while self.coordinator.state not in TERMINAL_JOB_STATES:
                await self.state.turned.wait()  # the job's end is a turn
        finally:
            ticker.stop()
            self.provider.set_outcome(self.coordinator.state, self.coordinator.reason)
            await self._keep_history(loop)
            await loop.run_in_executor(None, self.provider.shutdown)
            await asyncio.sleep(0.05)  # let the exits the shutdown caused be recorded
            self._tick()  # a session's unfinished cells end with the job
            self.coordinator.write_status()
        deadline = time.monotonic() + self.spec.am_linger_s
        while not self.state.released and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        self.server.stop()
        beats.close()
        self.coordinator.close()
        JobDir(self.job_dir).am_info.unlink(missing_ok=True)
        return 0 if self.coordinator.state == JobState.SUCCEEDED else 1
