"""The executor: runs in every task's process (local process or YARN container).

Registers with the AM, waits for the cluster spec, sets its framework's environment (``TF_CONFIG``,
torchrun's, JAX's: frameworks.py) and TonY's env contract,
runs the cell, heartbeats with progress, ships its stdout/stderr in batches (and still writes
them to its own stdout, which is the container log), sends the result, exits.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import traceback
from pathlib import Path

from .. import runtime
from ..protocol import (
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
from .cell import enter_src, run_user_code
from .frameworks import install_jax_cluster, task_env, tony_env
from .heartbeat import Heartbeater
from .link import AMLink, LinkError, Stale


def reserve_port(host: str = "127.0.0.1") -> int:
    """A free port for TensorFlow's server, picked on the task's own address (TensorFlow then
    binds it on every interface: see the README, "TensorFlow's task servers")."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, 0))
        except OSError:  # a name that is not an address of this host: any, as before
            s.bind(("", 0))
        return s.getsockname()[1]


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


def main() -> int:  # noqa: C901 - a task's whole life, being split into the executor's steps
    resolve_tensorboard_dir()
    env = ExecutorEnv.from_env(os.environ)
    task_id, attempt, is_chief = env.task_id, env.attempt, env.task_id == env.chief
    bundle_dir = Path(env.bundle_dir)
    # The launch's one-time registration secret: spent by register below, and out of what the
    # task's own processes inherit.
    os.environ.pop(ExecutorEnv.var("token"), None)
    am = AMLink(env.am_url, env.token, task_id, attempt)
    reaper.become_subreaper()
    host = env.executor_host or socket.getfqdn()
    try:
        # Before the heartbeat sidecar forks: it beats with the task's own token, which only
        # this answer carries (and forks no socket: the link's is closed first).
        body = RegisterRequest(
            task=task_id,
            attempt=attempt,
            host=host,
            port=reserve_port(host),
            pid=os.getpid(),
            container=env.container_id,
        )
        am.use_token(am.send("executor/register", body, RegisterAnswer).token)
    except Stale:
        return 143
    except LinkError as e:
        return unreachable(task_id, host, am, e)
    # Every thread's stack, on the owner's request: the sidecar signals, this process dumps.
    beat = Heartbeater.fork(am, env.heartbeat_ms / 1000.0, env.am_lost_limit, stacks.install())
    logs = LogCapture()
    bg = Background(am, logs, beat)
    reaper.flush_before_exit(bg.flush)
    try:
        bg.start()
        print(
            f"[tony] {task_id} attempt {attempt} registered; waiting for the cluster spec",
            flush=True,
        )
        spec = None
        while spec is None:
            spec = am.ask("executor/cluster-spec", ClusterSpecAnswer, wait=30).cluster_spec
    except Stale:
        return 143

    def env_for(local_rank: int) -> dict[str, str]:
        return task_env(
            env.framework,
            task_id,
            spec,
            local_rank=local_rank,
            procs_per_task=env.procs_per_task,
            job_id=env.job_id,
            attempt=attempt,
            max_attempts=env.max_attempts,
        )

    if env.min_workers:  # elastic: the agent sets torchrun's variables each round
        os.environ.update(tony_env(task_id, spec))
    else:
        os.environ.update(env_for(0))
    if env.framework == "jax":
        install_jax_cluster()
    if is_chief:
        # TonY's TB_PORT: a port for a TensorBoard the user's chief starts itself.
        os.environ["TB_PORT"] = str(reserve_port(host))
        if env.tensorboard:
            from . import tensorboard  # in the background: training does not wait for it

            tensorboard.start_in_background(am, dict(os.environ))
    src = enter_src(bundle_dir)
    if env.session:
        from .session_loop import serve

        serve(am, bg, bundle_dir, is_chief=is_chief)  # never returns
    try:
        # YARN: checkpoint_dir() restored from HDFS before the user code runs (checkpoints.py).
        # Elastic: each round's rank 0 mirrors, from its own process (executor/elastic.py).
        mirror = checkpoints.from_env(is_chief=is_chief and not env.min_workers)
        if env.min_workers:
            from . import elastic  # imports torch

            ranks, outcome = [], elastic.run(env, spec, host)
        else:
            ranks = localranks.start(env.procs_per_task, env_for) if env.procs_per_task > 1 else []
            if is_chief and mlflow_run.wanted():  # the cell runs here: report() reaches the run
                runtime.mlflow_run = mlflow_run.Run.start(bundle_dir, env.job_id, attempt)
            outcome = run_user_code(bundle_dir, is_chief=is_chief, src=src)
        failed = localranks.wait(ranks)
        if failed:
            raise RuntimeError(failed)
        if mirror is not None:
            mirror.close()
            if is_chief:
                checkpoints.keep_tensorboard()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        outcome = (
            CellOutcome("ok") if code == 0 else CellOutcome("error", f"SystemExit: {e.code}")
        ).to_json()
    except BaseException:  # noqa: BLE001 - any failure of user code is reported, then we exit 1
        traceback.print_exc()
        outcome, code = CellOutcome("error", traceback.format_exc()).to_json(), 1
    if runtime.mlflow_run is not None:
        runtime.mlflow_run.end(outcome.get("status") == "ok")
    try:
        final = HeartbeatRequest(runtime.current_progress(), task=task_id, attempt=attempt)
        am.send("executor/heartbeat", final, HeartbeatAnswer)  # the final progress
        result = CellOutcome.from_json(outcome).outcome_fields()
        am.send("executor/result", ResultRequest(**result, task=task_id, attempt=attempt), Ok)
    except Exception as e:  # noqa: BLE001 - the exit code still tells the AM
        print(f"[tony] could not send the result: {e}", file=sys.stderr)
        code = code or 1
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
