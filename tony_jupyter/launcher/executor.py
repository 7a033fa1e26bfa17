"""The executor: runs in every task's process (local process or YARN container).

Registers with the AM, waits for the cluster spec, sets ``TF_CONFIG`` and TonY's env contract,
runs the cell, heartbeats with progress, ships its stdout/stderr in batches (and still writes
them to its own stdout, which is the container log), sends the result, exits.
"""

from __future__ import annotations

import array
import base64
import fcntl
import json
import linecache
import os
import socket
import sys
import termios
import threading
import time
import traceback
from pathlib import Path

import cloudpickle
import requests

from .. import runtime, shards, tables
from ..bundle import split_last_expression
from . import checkpoints
from .heartbeat import Heartbeater

LOG_FLUSH_S = 0.25


class Stale(Exception):
    """The AM says this attempt is over."""


class AMLink:
    def __init__(self, url: str, token: str, task: str, attempt: int):
        self.url, self.task, self.attempt = url.rstrip("/"), task, attempt
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, timeout: float = 10, **kw) -> dict:
        r = self.session.request(method, f"{self.url}/api/v1/{path}", timeout=timeout, **kw)
        if r.status_code == 410:
            raise Stale(r.json().get("error", "attempt over"))
        r.raise_for_status()
        return r.json()

    def post(self, path: str, **body) -> dict:
        return self.call("POST", path, json={"task": self.task, "attempt": self.attempt, **body})


class LogCapture:
    """Points fds 1 and 2 at a pipe; a thread copies it to the original stdout and a buffer."""

    def __init__(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.orig = os.dup(1)
        r, w = os.pipe()
        os.dup2(w, 1)
        os.dup2(w, 2)
        os.close(w)
        self.read_fd = r
        self.buf: list[str] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115

    def _read(self) -> None:
        while chunk := os.read(self.read_fd, 65536):
            os.write(self.orig, chunk)
            with self.lock:
                self.buf.append(chunk.decode("utf-8", errors="replace"))

    def drain(self, timeout: float = 1.0) -> None:
        """Wait until what the task has written so far is in the buffer (a session ships a
        cell's output before its result, so the output belongs to that cell)."""
        sys.stdout.flush()
        sys.stderr.flush()
        pending = array.array("i", [0])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fcntl.ioctl(self.read_fd, termios.FIONREAD, pending, True)
            if not pending[0]:
                break
            time.sleep(0.002)
        time.sleep(0.005)  # a chunk the reader has just read is appended within moments
        with self.lock:
            pass

    def take(self) -> str:
        with self.lock:
            text, self.buf = "".join(self.buf), []
        return text

    def close(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.orig, 1)
        os.dup2(self.orig, 2)  # closes the pipe's last write ends, so the reader sees EOF
        self.reader.join(5)


class Background(threading.Thread):
    """Log shipping, and progress for the heartbeat sidecar; exits if the AM says stop."""

    def __init__(self, am: AMLink, logs: LogCapture, beat: Heartbeater):
        super().__init__(daemon=True)
        self.am, self.logs, self.beat = am, logs, beat
        self.stop = threading.Event()
        self.cell: int | None = None  # the session cell running now, for interrupts
        self._ship_lock = threading.Lock()

    def ship_logs(self) -> None:
        with self._ship_lock:  # the main thread ships too (a session, between cells): keep order
            text = self.logs.take()
            if text:
                self.am.post("executor/logs", text=text)

    def run(self) -> None:
        while not self.stop.wait(LOG_FLUSH_S):
            self.beat.update(runtime.current_progress(), self.cell)
            try:
                self.ship_logs()
            except Stale:
                os._exit(143)
            except requests.RequestException:
                pass  # the sidecar decides when the AM is gone; these lines are lost


def reserve_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def tony_env(task_id: str, cluster_spec: dict[str, list[str]]) -> dict[str, str]:
    type_, _, index = task_id.partition(":")
    # TensorFlow wants the evaluator outside the cluster it trains with; TonY's CLUSTER_SPEC
    # lists every task.
    tf_cluster = {k: v for k, v in cluster_spec.items() if k != "evaluator"}
    return {
        "TF_CONFIG": json.dumps(
            {"cluster": tf_cluster, "task": {"type": type_, "index": int(index)}}
        ),
        "CLUSTER_SPEC": json.dumps(cluster_spec),
        "JOB_NAME": type_,
        "TASK_INDEX": index,
        "TASK_NUM": str(len(cluster_spec.get(type_, []))),
    }


def run_user_code(bundle_dir: Path, is_chief: bool) -> dict:
    meta = json.loads((bundle_dir / "bundle.json").read_text())
    source = (bundle_dir / "cell.py").read_text()
    filename = meta.get("filename", "<tony-cell>")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    namespace.update(cloudpickle.loads((bundle_dir / "names.pkl").read_bytes()))
    namespace.update(shards.bind(bundle_dir, meta.get("shards")))
    if meta.get("argv"):
        sys.argv = list(meta["argv"])
    return execute(source, filename, namespace, meta.get("pull", []), is_chief)


def execute(source: str, filename: str, namespace: dict, pull: list[str], is_chief: bool) -> dict:
    """Run a cell in ``namespace``; the chief's outcome carries the value and pulled names."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    body, last = split_last_expression(source)
    exec(compile(body, filename, "exec"), namespace)  # noqa: S102 - running the user's cell is the point
    value = eval(compile(last, filename, "eval"), namespace) if last else None  # noqa: S307
    if not is_chief:
        return {"status": "ok"}
    value = runtime.detach_history(value)
    pulled = {n: runtime.detach_history(namespace[n]) for n in pull if n in namespace}
    missing = [n for n in pull if n not in namespace]
    arrow, pulled = tables.split_tabular(pulled)  # tables and arrays travel as Arrow, not pickle
    payload = cloudpickle.dumps({"value": value, "pulled": pulled, "missing": missing})
    return {
        "status": "ok",
        "value": base64.b64encode(payload).decode(),
        "arrow": {n: base64.b64encode(b).decode() for n, b in arrow.items()},
    }


def resolve_tensorboard_dir(env=os.environ) -> None:
    """A relative TONY_TENSORBOARD_DIR (YARN) is in this task's cwd, its container: made
    absolute before the cell runs, so tensorboard_dir() and TensorBoard agree even if the cell
    changes directory."""
    tb_dir = env.get("TONY_TENSORBOARD_DIR")
    if tb_dir and not os.path.isabs(tb_dir):
        env["TONY_TENSORBOARD_DIR"] = os.path.abspath(tb_dir)


def main() -> int:
    resolve_tensorboard_dir()
    env = os.environ
    task_id, attempt = env["TONY_TASK_ID"], int(env["TONY_ATTEMPT"])
    bundle_dir = Path(env.get("TONY_BUNDLE_DIR", "."))
    interval = int(env.get("TONY_HEARTBEAT_MS", "1000")) / 1000.0
    am = AMLink(env["TONY_AM_URL"], env["TONY_TOKEN"], task_id, attempt)
    beat = Heartbeater.fork(am, interval, int(env.get("TONY_MAX_MISSED", "8")))
    logs = LogCapture()
    bg = Background(am, logs, beat)
    host = env.get("TONY_EXECUTOR_HOST") or socket.getfqdn()
    try:
        am.post(
            "executor/register",
            host=host,
            port=reserve_port(),
            pid=os.getpid(),
            container=env.get("TONY_CONTAINER_ID"),
        )
        bg.start()
        print(
            f"[tony] {task_id} attempt {attempt} registered; waiting for the cluster spec",
            flush=True,
        )
        spec = None
        while spec is None:
            spec = am.call(
                "GET",
                "executor/cluster-spec",
                timeout=40,
                params={"task": task_id, "attempt": attempt, "timeout": 30},
            )["cluster_spec"]
    except Stale:
        return 143
    os.environ.update(tony_env(task_id, spec))
    if task_id == env.get("TONY_CHIEF") and env.get("TONY_TENSORBOARD", "1") == "1":
        from . import tensorboard  # in the background: training does not wait for it

        tensorboard.start_in_background(am, dict(os.environ))
    if env.get("TONY_SESSION") == "1":
        from .session_loop import serve

        serve(am, bg, bundle_dir, is_chief=task_id == env.get("TONY_CHIEF"))  # never returns
    try:
        # YARN: checkpoint_dir() restored from HDFS before the user code runs (checkpoints.py).
        mirror = checkpoints.from_env(is_chief=task_id == env.get("TONY_CHIEF"))
        outcome = run_user_code(bundle_dir, is_chief=task_id == env.get("TONY_CHIEF"))
        if mirror is not None:
            mirror.close()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        outcome = (
            {"status": "ok"}
            if code == 0
            else {"status": "error", "traceback": f"SystemExit: {e.code}"}
        )
    except BaseException:  # noqa: BLE001 - any failure of user code is reported, then we exit 1
        traceback.print_exc()
        outcome, code = {"status": "error", "traceback": traceback.format_exc()}, 1
    try:
        am.post("executor/heartbeat", progress=runtime.current_progress())  # the final progress
        am.post("executor/result", **outcome)
    except Exception as e:  # noqa: BLE001 - the exit code still tells the AM
        print(f"[tony] could not send the result: {e}", file=sys.stderr)
        code = code or 1
    bg.stop.set()
    bg.join(5)
    logs.close()
    try:
        bg.ship_logs()
    except (Stale, requests.RequestException):
        pass
    # TensorFlow's background threads can block interpreter shutdown; everything is sent.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
