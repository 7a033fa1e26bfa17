"""TensorBoard beside the chief: started in the background, registered with the AM.

The chief's executor calls :func:`start_in_background` once the cluster spec has arrived. A
thread starts ``python -m tony_jupyter.executor.tensorboard`` (TensorBoard's own ``main``, with
TensorFlow's import blocked so TensorBoard runs on its bundled stub: about 1 s and 75 MB instead
of 25 s and 700 MB with TensorFlow, and the scalars, histograms and images it reads from event
files are the same), waits until it answers, and registers ``{"name": "tensorboard", "url": ...,
"key": ..., "path_key": ...}`` with the AM's ``/api/v1/endpoints``. TensorBoard runs behind
:mod:`.tensorboard_guard` (the two secrets are made here, and reach it in its environment): the
notebook reaches it through the Jupyter server's ``/tony/proxy/<job>/tensorboard/`` (see
``tony_jupyter.server_ext``), which sends the key; on YARN also through the RM's web proxy.

TensorBoard stays in the executor's process group (``supervise.start(own_group=False)``), so
the provider's kill of the group (local backend) or of the container (YARN) ends it with the
task. Nothing here may fail the job: every
problem is one log line.
"""

from __future__ import annotations

import getpass
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..core import jobdir, supervise
from ..core.protocol import EndpointRequest, ExecutorEnv, Ok
from .tensorboard_guard import Guard, GuardConfig

READY_TIMEOUT_S = 90.0
RELOAD_INTERVAL_S = 1  # how often TensorBoard rereads the event files: the scalars' latency


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def command(logdir: str, bind: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tony_jupyter.executor.tensorboard",
        "--logdir",
        logdir,
        "--host",
        bind,
        "--port",
        str(port),
        "--reload_interval",
        str(RELOAD_INTERVAL_S),
        "--load_fast",
        "false",  # no separate data-server process to outlive us
    ]


def job_owner() -> str:
    """The user the job runs as: in a YARN container the NodeManager sets ``USER`` to the
    application's user. "" (no owner: the RM's proxy never gets in on a secure cluster) if
    there is no telling."""
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):
        return ""


def guard_config(env: dict[str, str]) -> GuardConfig:
    """Fresh secrets for this TensorBoard."""
    return GuardConfig(
        key=secrets.token_urlsafe(32),
        path_key=secrets.token_urlsafe(24),
        owner=job_owner(),
        secure=env.get(ExecutorEnv.var("secure")) == "1",
    )


def wait_ready(
    proc: subprocess.Popen, url: str, key: str, timeout: float = READY_TIMEOUT_S
) -> bool:
    # In TensorBoard's thread (requests is imported there): the task's start does not wait.
    answers = supervise.http_ok(url + "data/runs", {"Authorization": f"Bearer {key}"})
    return supervise.wait_ready(proc, answers, timeout)


def run(am, env: dict[str, str], say=print, log_dir: str | None = None) -> subprocess.Popen | None:
    """Start TensorBoard, wait for it, register it. Returns the process (None if it failed)."""
    logdir = env.get(ExecutorEnv.var("tensorboard_dir")) or os.path.join(
        os.getcwd(), jobdir.TENSORBOARD
    )
    advertise = env.get(ExecutorEnv.var("executor_host")) or "127.0.0.1"
    # On a cluster the AM (and through it the notebook server) reaches us from another host.
    bind = "127.0.0.1" if advertise in ("127.0.0.1", "localhost") else "0.0.0.0"  # noqa: S104
    began = time.monotonic()
    guard = guard_config(env)
    try:
        os.makedirs(logdir, exist_ok=True)
        port = free_port()
        # In the task's own directory, not the shipped one the task steps into (cell.py).
        log = Path(log_dir or os.getcwd()) / "tensorboard.log"
        proc = supervise.start(
            command(logdir, bind, port),
            log=log,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **guard.to_env()},
            own_group=False,  # the task's: its group's kill ends it with the task
        )
    except OSError as e:
        say(f"[tony] TensorBoard not started: {e}")
        return None
    url = f"http://{advertise}:{port}/"
    if not wait_ready(proc, url, guard.key):
        say(f"[tony] TensorBoard did not answer at {url} (see tensorboard.log); going on without")
        proc.kill_now()
        return None
    try:
        am.send("endpoints", EndpointRequest("tensorboard", url, guard.key, guard.path_key), Ok)
    except Exception as e:  # noqa: BLE001 - TensorBoard is a convenience, never a failure
        say(f"[tony] TensorBoard at {url} could not be registered with the AM: {e}")
        return proc
    say(f"[tony] TensorBoard at {url} (logdir {logdir}), up in {time.monotonic() - began:.1f}s")
    return proc


def start_in_background(am, env: dict[str, str], say=print) -> threading.Thread:
    t = threading.Thread(
        target=run, args=(am, env, say, os.getcwd()), name="tony-tensorboard", daemon=True
    )
    t.start()
    return t


def main() -> None:
    """TensorBoard's own ``run_main``, with its server's WSGI app behind :class:`Guard`."""
    found = GuardConfig.from_env(os.environ)  # removed from the environment once read
    if found is None:
        sys.exit("tony-jupyter's TensorBoard needs its guard's keys in its environment")
    config: GuardConfig = found
    # TensorBoard imports TensorFlow when it can (25 s and 700 MB here) only to read files;
    # blocked, it uses its own stub, which reads the same event files.
    sys.modules["tensorflow"] = None  # type: ignore[assignment]
    from absl import app
    from tensorboard import default, main_lib, program
    from tensorboard.plugins import base_plugin

    class GuardedServer(program.WerkzeugServer):
        def __init__(self, wsgi_app, flags):
            super().__init__(Guard(wsgi_app, config), flags)

    main_lib.global_init()
    board = program.TensorBoard(plugins=default.get_plugins(), server_class=GuardedServer)
    sys.argv[0] = "tensorboard"
    try:
        app.run(board.main, flags_parser=board.configure)
    except base_plugin.FlagsError as e:
        sys.exit(f"Error: {e}")


if __name__ == "__main__":
    main()
