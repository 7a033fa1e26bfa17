"""TensorBoard beside the chief: started in the background, registered with the AM.

The chief's executor calls :func:`start_in_background` once the cluster spec has arrived. A
thread starts ``python -m tony_jupyter.executor.tensorboard`` (TensorBoard's own ``main``, with
TensorFlow's import blocked so TensorBoard runs on its bundled stub: about 1 s and 75 MB instead
of 25 s and 700 MB with TensorFlow, and the scalars, histograms and images it reads from event
files are the same), waits until it answers, and registers ``{"name": "tensorboard", "url": ...}``
with the AM's ``/api/v1/endpoints``. The notebook reaches it only through the Jupyter server's
``/tony/proxy/<job>/tensorboard/`` (see ``tony_jupyter.server_ext``).

TensorBoard stays in the executor's process group, so the provider's kill of the group (local
backend) or of the container (YARN) ends it with the task. Nothing here may fail the job: every
problem is one log line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

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


def wait_ready(proc: subprocess.Popen, url: str, timeout: float = READY_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if requests.get(url + "data/runs", timeout=2).ok:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.2)
    return False


def run(am, env: dict[str, str], say=print, log_dir: str | None = None) -> subprocess.Popen | None:
    """Start TensorBoard, wait for it, register it. Returns the process (None if it failed)."""
    logdir = env.get("TONY_TENSORBOARD_DIR") or os.path.join(os.getcwd(), "tensorboard")
    advertise = env.get("TONY_EXECUTOR_HOST") or "127.0.0.1"
    # On a cluster the AM (and through it the notebook server) reaches us from another host.
    bind = "127.0.0.1" if advertise in ("127.0.0.1", "localhost") else "0.0.0.0"  # noqa: S104
    began = time.monotonic()
    try:
        os.makedirs(logdir, exist_ok=True)
        port = free_port()
        # In the task's own directory, not the shipped one the task steps into (cell.py).
        log = Path(log_dir or os.getcwd()) / "tensorboard.log"
        out = open(log, "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(
            command(logdir, bind, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        out.close()
    except OSError as e:
        say(f"[tony] TensorBoard not started: {e}")
        return None
    url = f"http://{advertise}:{port}/"
    if not wait_ready(proc, url):
        say(f"[tony] TensorBoard did not answer at {url} (see tensorboard.log); going on without")
        if proc.poll() is None:
            proc.kill()
        return None
    try:
        am.call("POST", "endpoints", json={"name": "tensorboard", "url": url})
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
    # TensorBoard imports TensorFlow when it can (25 s and 700 MB here) only to read files;
    # blocked, it uses its own stub, which reads the same event files.
    sys.modules["tensorflow"] = None  # type: ignore[assignment]
    from tensorboard import main as tb_main

    sys.argv[0] = "tensorboard"
    tb_main.run_main()


if __name__ == "__main__":
    main()
