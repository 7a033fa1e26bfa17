"""The executor: runs in every task's process (local process or YARN container), in steps.

:func:`register` with the AM; :func:`start_background` (heartbeats with progress, its
stdout/stderr shipped in batches, still written to its own stdout, the container log);
:func:`await_cluster_spec`; :func:`prepare` (its framework's environment, ``TF_CONFIG``,
torchrun's, JAX's: frameworkenv.py, and TonY's env contract); :func:`run_cell`, a typed
:class:`CellOutcome`; :func:`report` it (its wire form made there only); exit.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import traceback
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from .. import runtime
from ..core.protocol import (
    CellOutcome,
    ClusterSpecAnswer,
    ExecutorEnv,
    HeartbeatAnswer,
    HeartbeatRequest,
    Ok,
    RegisterAnswer,
    RegisterRequest,
    ResultRequest,
)
from . import checkpoints, localranks, mlflow_run, reaper, stacks
from .background import Background
from .capture import LogCapture
from .cell import enter_src, exit_code, run_user_code
from .frameworkenv import install_jax_cluster, task_env, tony_env
from .heartbeat import Heartbeater
from .link import AMLink, LinkError, Stale
from .ports import reserve_port


def resolve_tensorboard_dir(env=os.environ) -> None:
    """A relative TONY_TENSORBOARD_DIR (YARN) is in this task's cwd, its container: made
    absolute before the cell runs, so tensorboard_dir() and TensorBoard agree even if the cell
    changes directory."""
    var = ExecutorEnv.var("tensorboard_dir")
    tb_dir = env.get(var)
    if tb_dir and not os.path.isabs(tb_dir):
        env[var] = os.path.abspath(tb_dir)


UNREACHABLE = 69  # EX_UNAVAILABLE: this task could not reach its AM


def unreachable(task_id: str, host: str, am: AMLink, error: OSError) -> int:
    """Said on stderr (which YARN hands the AM with the exit code, and the AM the cell) before
    anything else waits on this task: which host could not reach which address and port."""
    print(
        f"tony-jupyter: {task_id} on host {host} cannot reach the job's AM at "
        f"{am.host}:{am.port} ({error}). The cluster's nodes must reach each other on the ports "
        "a job's AM and tasks listen on (ephemeral ports): open them between the nodes, and "
        "see `tony-jupyter doctor`",
        file=sys.stderr,
        flush=True,
    )
    return UNREACHABLE


class TaskExit(Exception):
    """A step ends the task early, with this exit code (143: the AM says the attempt is over;
    UNREACHABLE: no AM to report to)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Registered:
    """A task the AM took: its link (carrying the task's own token from now on) and its host."""

    env: ExecutorEnv
    am: AMLink
    host: str

    @property
    def is_chief(self) -> bool:
        return self.env.task_id == self.env.chief


@dataclass(frozen=True)
class Prepared:
    """A registered task ready to run its cell: the job's cluster spec, and the directory
    shipped with the job, now the working directory (None: nothing was shipped)."""

    task: Registered
    cluster_spec: dict[str, list[str]]
    src: str | None


@dataclass(frozen=True)
class Finished:
    """How the cell came out, and the exit code the task ends with."""

    outcome: CellOutcome
    code: int


def register(env: ExecutorEnv) -> Registered:
    """Registers this task with its AM, spending the launch's one-time secret on the task's own
    token. Raises :class:`TaskExit` when the attempt is over or the AM cannot be reached."""
    am = AMLink(env.am_url, env.token, env.task_id, env.attempt)
    host = env.executor_host or socket.getfqdn()
    body = RegisterRequest(
        task=env.task_id,
        attempt=env.attempt,
        host=host,
        port=reserve_port(host),
        pid=os.getpid(),
        container=env.container_id,
    )
    try:
        am.use_token(am.send("executor/register", body, RegisterAnswer).token)
    except Stale:
        raise TaskExit(143) from None
    except LinkError as e:
        raise TaskExit(unreachable(env.task_id, host, am, e)) from None
    return Registered(env, am, host)


def start_background(task: Registered) -> Background:
    """The heartbeat sidecar (forked now: it beats with the task's own token, which only
    registration gives) and the thread that ships this process's output to the AM."""
    # Every thread's stack, on the owner's request: the sidecar signals, this process dumps.
    env = task.env
    beat = Heartbeater.fork(task.am, env.heartbeat_ms / 1000.0, env.am_lost_limit, stacks.install())
    bg = Background(task.am, LogCapture(), beat)
    reaper.flush_before_exit(bg.flush)
    bg.start()
    return bg


def await_cluster_spec(task: Registered) -> dict[str, list[str]]:
    """The job's cluster spec, once every task registered. Raises :class:`TaskExit` when the
    attempt is over meanwhile."""
    print(
        f"[tony] {task.env.task_id} attempt {task.env.attempt} registered; "
        "waiting for the cluster spec",
        flush=True,
    )
    try:
        spec = None
        while spec is None:
            spec = task.am.ask("executor/cluster-spec", ClusterSpecAnswer, wait=30).cluster_spec
    except Stale:
        raise TaskExit(143) from None
    return spec


def rank_env(
    env: ExecutorEnv, cluster_spec: dict[str, list[str]], local_rank: int
) -> dict[str, str]:
    """The framework's and TonY's variables of one of this task's processes."""
    return task_env(
        env.framework,
        env.task_id,
        cluster_spec,
        local_rank=local_rank,
        procs_per_task=env.procs_per_task,
        job_id=env.job_id,
        attempt=env.attempt,
        max_attempts=env.max_attempts,
    )


def prepare(
    task: Registered, cluster_spec: dict[str, list[str]], environ: MutableMapping[str, str]
) -> Prepared:
    """The task's environment (``environ``: its framework's variables and TonY's; the chief's
    TB_PORT and TensorBoard), and its working directory: the directory shipped with the job."""
    env = task.env
    if env.min_workers:  # elastic: the agent sets torchrun's variables each round
        environ.update(tony_env(env.task_id, cluster_spec))
    else:
        environ.update(rank_env(env, cluster_spec, 0))
    if env.framework == "jax":
        install_jax_cluster()
    if task.is_chief:
        # TonY's TB_PORT: a port for a TensorBoard the user's chief starts itself.
        environ["TB_PORT"] = str(reserve_port(task.host))
        if env.tensorboard:
            from . import tensorboard  # in the background: training does not wait for it

            tensorboard.start_in_background(task.am, dict(environ))
    return Prepared(task, cluster_spec, enter_src(Path(env.bundle_dir)))


def _run(prepared: Prepared) -> CellOutcome:
    """The cell, in this process (and its --procs-per-task ranks) or under PyTorch's elastic
    agent."""
    env, is_chief = prepared.task.env, prepared.task.is_chief
    if env.min_workers:
        from . import elastic  # imports torch

        return elastic.run(env, prepared.cluster_spec, prepared.task.host)
    ranks = []
    if env.procs_per_task > 1:
        spec = prepared.cluster_spec
        ranks = localranks.start(env.procs_per_task, lambda rank: rank_env(env, spec, rank))
    if is_chief and mlflow_run.wanted():  # the cell runs here: report() reaches the run
        runtime.mlflow_run = mlflow_run.Run.start(Path(env.bundle_dir), env.job_id, env.attempt)
    outcome = run_user_code(Path(env.bundle_dir), is_chief=is_chief, src=prepared.src)
    failed = localranks.wait(ranks)
    if failed:
        raise RuntimeError(failed)
    return outcome


def run_cell(prepared: Prepared) -> Finished:
    """Runs the cell: its outcome, and the task's exit code (the code of a ``SystemExit`` the
    cell raised; 1 for any other failure, whose traceback is printed and reported)."""
    env, is_chief = prepared.task.env, prepared.task.is_chief
    try:
        # YARN: checkpoint_dir() restored from HDFS before the user code runs (checkpoints.py).
        # Elastic: each round's rank 0 mirrors, from its own process (executor/elastic.py).
        mirror = checkpoints.from_env(is_chief=is_chief and not env.min_workers)
        outcome = _run(prepared)
        if mirror is not None:
            mirror.close()
            if is_chief:
                checkpoints.keep_tensorboard()
        return Finished(outcome, 0)
    except SystemExit as e:
        code = exit_code(e)
        if code == 0:
            return Finished(CellOutcome("ok"), 0)
        return Finished(CellOutcome("error", f"SystemExit: {e.code}"), code)
    except BaseException:  # noqa: BLE001 - any failure of user code is reported, then we exit 1
        traceback.print_exc()
        return Finished(CellOutcome("error", traceback.format_exc()), 1)


def report(task: Registered, finished: Finished) -> int:
    """Ends the MLflow run, sends the final progress and the outcome to the AM; the exit code
    (1 when the cell succeeded but its outcome could not be sent: the code still tells the AM)."""
    if runtime.mlflow_run is not None:
        runtime.mlflow_run.end(finished.outcome.ok)
    tid, attempt = task.env.task_id, task.env.attempt
    try:
        final = HeartbeatRequest(runtime.current_progress(), task=tid, attempt=attempt)
        task.am.send("executor/heartbeat", final, HeartbeatAnswer)  # the final progress
        task.am.send(
            "executor/result",
            ResultRequest.carrying(finished.outcome, task=tid, attempt=attempt),
            Ok,
        )
    except Exception as e:  # noqa: BLE001 - the exit code still tells the AM
        print(f"[tony] could not send the result: {e}", file=sys.stderr)
        return finished.code or 1
    return finished.code


def main() -> int:
    """A task's life: register, prepare, run the cell (or serve a session's cells), report;
    then the exit (``os._exit``: see below)."""
    resolve_tensorboard_dir()
    env = ExecutorEnv.from_env(os.environ)
    # The launch's one-time registration secret: spent by register, and out of what the
    # task's own processes inherit.
    os.environ.pop(ExecutorEnv.var("token"), None)
    reaper.become_subreaper()
    try:
        task = register(env)  # before the sidecar forks: it beats with the task's own token
        bg = start_background(task)
        prepared = prepare(task, await_cluster_spec(task), os.environ)
    except TaskExit as e:
        return e.code
    if env.session:
        from .session_loop import serve

        serve(task.am, bg, Path(env.bundle_dir), is_chief=task.is_chief)  # never returns
    code = report(task, run_cell(prepared))
    # What a normal interpreter exit runs: the user's atexit handlers, multiprocessing's
    # removal of its /tmp/pymp-* directories. A hard exit of the user's (os._exit) skips them,
    # as it would under `python`.
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - a failing handler is reported, as Python does
        traceback.print_exc()
    # Ships what is left (reaper.flush_before_exit), kills what the task left running; without
    # waiting on TensorFlow's background threads, which can block interpreter shutdown.
    os._exit(code)
