"""One run of bench/lib/workload.py on each side: tony-jupyter (local or YARN backend), processes
started by hand with TF_CONFIG, and Hadoop's distributed-shell AM on the devcluster. Each returns
a row of seconds measured from the moment the side was asked to start (t0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.lib.common import free_port
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import JobState
from tony_jupyter.job import TonyJob
from tony_jupyter.options import parse_job_args

WORKLOAD = Path(__file__).with_name("workload.py")
TIMEOUT_S = 300.0


def _new_out(conf: dict) -> dict:
    out = Path(tempfile.mkdtemp(prefix="tony-bench-"))
    return dict(conf, out=str(out))


def wait_tasks(out: Path, n: int, timeout: float = TIMEOUT_S, alive=None) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = sorted(out.glob("[0-9]*.json"))
        if len(done) >= n:
            return [json.loads(p.read_text()) for p in done]
        if alive is not None:
            alive()
        time.sleep(0.02)
    got = len(list(out.glob("[0-9]*.json")))
    raise TimeoutError(f"only {got}/{n} tasks finished in {out}")


def summarize(t0: float, tasks: list[dict], t_done: float | None = None) -> dict:
    chief = min(tasks, key=lambda t: t["index"])
    row = {
        "to_user_code_s": max(t["t_tf_config"] for t in tasks) - t0,
        "to_framework_s": max(t["t_tf_imported"] for t in tasks) - t0,
        "to_first_step_s": max(t["t_first_step"] for t in tasks) - t0,
        "steps_per_s": chief["steps_per_s"],
        "worker_max_rss_mib": chief["max_rss_mib"],
    }
    if t_done is not None:
        row["to_job_end_s"] = t_done - t0
    return row


def by_hand(workers: int, conf: dict) -> dict:
    """The floor: the same processes, started directly with TF_CONFIG."""
    conf = _new_out(dict(conf, workers=workers))
    out = Path(conf["out"])
    (out / "conf.json").write_text(json.dumps(conf))
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    t0 = time.time()
    procs = []
    for i in range(workers):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        env = dict(os.environ, TF_CONFIG=tf_config, BENCH_CONF=str(out / "conf.json"))
        with open(out / f"worker-{i}.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(WORKLOAD)], env=env, stdout=log, stderr=subprocess.STDOUT
                )
            )

    def alive() -> None:
        for p in procs:
            if p.poll() not in (None, 0):
                raise RuntimeError(f"hand-launched worker exited {p.returncode}; see {out}")

    try:
        tasks = wait_tasks(out, workers, alive=alive)
        for p in procs:
            p.wait(60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return summarize(t0, tasks, time.time())


def tony(backend: str, workers: int, conf: dict, flags: str = "", on_job=None) -> dict:
    """tony-jupyter: what the magic does after parsing (submit, then follow the job).
    ``on_job(job)`` runs while the job does (the streaming bench follows it there)."""
    from tony_jupyter.job import submit

    conf = _new_out(dict(conf, workers=workers))
    _, spec = parse_job_args(f"--workers {workers} --backend {backend} --memory 1g {flags}")
    bundle = make_bundle(WORKLOAD.read_text(), {"BENCH": conf}, extra=("BENCH",))
    t0 = time.time()
    job = TonyJob(submit(spec, bundle))
    extra: dict = {}
    try:
        if on_job is not None:
            extra = on_job(job) or {}
        snap = job.wait(TIMEOUT_S)
        t_done = time.time()
        if snap.state != JobState.SUCCEEDED:
            raise RuntimeError(f"{job.job_id} {snap.state}: {snap.reason[:500]}")
        tasks = wait_tasks(Path(conf["out"]), workers, timeout=10)
    finally:
        if job.state not in ("SUCCEEDED", "FAILED", "KILLED", "LOST"):
            job.kill()
        job.client.release()
        job.client.wait_am_exit(60)
    return {**summarize(t0, tasks, t_done), **extra}


def tony_local_cold(workers: int, conf: dict) -> dict:
    """tony-jupyter, local, no spare at all (``TONY_JUPYTER_WARM=0``): fresh interpreters."""
    from tony_jupyter.core import warmproc as switch
    from tony_jupyter.launcher import localwarm as spare

    spare.discard()
    os.environ[switch.SWITCH] = "0"
    try:
        return tony("local", workers, conf)
    finally:
        os.environ.pop(switch.SWITCH, None)
        spare.discard()


def tony_local_first(workers: int, conf: dict) -> dict:
    """tony-jupyter, local, a kernel's first job: the spare AM the extension started as it
    loaded (``on_load``: spare executors that imported no framework), waited for untimed (the
    time a user takes to type the first cell); let go after the job, untimed."""
    from tony_jupyter.launcher import localwarm as spare

    spare.discard()
    timer = spare.on_load()
    if timer is not None:
        timer.join()
        wait_spare_idle()
    try:
        return tony("local", workers, conf)
    finally:
        spare.discard()


def tony_local_warm(workers: int, conf: dict) -> dict:
    """tony-jupyter, local, a kernel's later job: the spare AM its previous job (of this shape)
    left, whose spare executors imported TensorFlow, waited for untimed (think time between two
    cells); let go after the job, untimed, so that no other side shares the CPUs with it."""
    from tony_jupyter.launcher import localwarm as spare

    _, spec = parse_job_args(f"--workers {workers} --backend local --memory 1g")
    spare.discard()
    spare.start(workers, spec)
    wait_spare_idle()
    try:
        return tony("local", workers, conf)
    finally:
        spare.discard()


def wait_spare_idle(timeout: float = 600) -> None:
    """Until the kernel's spare AM and each of its spare executors wait for their job: blocked
    reading their stdin, every import done (a CPU-quiet test is fooled by a loaded machine)."""
    import psutil

    from tony_jupyter.launcher import localwarm as spare

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = spare.current()
        if s is not None:
            try:
                am = psutil.Process(s.proc.pid)
                family = [am, *am.children()]
                if len(family) > 1 and all(_reading_stdin(p.pid) for p in family):
                    return
            except psutil.Error:
                pass
        time.sleep(0.1)
    raise TimeoutError("the kernel's spare AM did not come up waiting")


def _reading_stdin(pid: int) -> bool:
    """``read(0, ...)`` is the syscall the process is blocked in (x86-64: number 0)."""
    try:
        nr, fd = Path(f"/proc/{pid}/syscall").read_text().split()[:2]
    except (OSError, ValueError):
        return False
    return nr == "0" and int(fd, 16) == 0


def distributed_shell(cluster, workers: int, conf: dict) -> dict:
    """Hadoop's own distributed-shell AM launching the same script in ``workers`` containers."""
    from bench.lib import dshell

    conf = _new_out(dict(conf, workers=workers))
    out = Path(conf["out"])
    rendezvous = out / "rendezvous"
    rendezvous.mkdir()
    conf["rendezvous"] = str(rendezvous)
    (out / "conf.json").write_text(json.dumps(conf))
    command = (
        f"env BENCH_CONF={out / 'conf.json'} TF_USE_LEGACY_KERAS=1 {sys.executable} {WORKLOAD}"
    )
    t0 = time.time()
    app_id = dshell.submit(cluster, out, command, workers)
    try:
        tasks = wait_tasks(out, workers, alive=lambda: dshell.check_alive(cluster, app_id))
        dshell.wait_end(cluster, app_id)
    except BaseException:
        dshell.kill(cluster, app_id)
        raise
    return summarize(t0, tasks, time.time())


def tony_peer(cluster, workers: int, conf: dict) -> dict:
    """TonY itself (0.4.7, its own Java client and AM; see bench/lib/tony_peer.py) launching the
    same script in ``workers`` containers; t0 is the moment its client is started."""
    from bench.lib import dshell, tony_peer

    conf = _new_out(dict(conf, workers=workers))
    out = Path(conf["out"])
    (out / "conf.json").write_text(json.dumps(conf))
    cmd = tony_peer.command(
        cluster, workers, WORKLOAD, sys.executable, {"BENCH_CONF": str(out / "conf.json")}
    )
    client_log = out / "tony-client.log"
    t0 = time.time()
    with open(client_log, "wb") as log:
        # cwd: TonyClient writes <app id>-tony-final.xml into its working directory.
        client = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=out)

    def alive() -> None:
        if client.poll() is not None:
            raise RuntimeError(f"TonY's client exited {client.returncode}; see {client_log}")

    try:
        tasks = wait_tasks(out, workers, alive=alive)
        client.wait(120)
        t_done = time.time()
        if client.returncode != 0:
            raise RuntimeError(f"TonY's client exited {client.returncode}; see {client_log}")
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        app = tony_peer.app_id(client_log)
        if app is not None and dshell.app(cluster, app)["state"] not in dshell.TERMINAL:
            dshell.kill(cluster, app)
    row = summarize(t0, tasks, t_done)
    app = tony_peer.app_id(client_log)
    if app is not None:  # when the RM had the application: the client's own start-up cost
        row["to_submitted_s"] = dshell.app(cluster, app)["startedTime"] / 1000 - t0
    return row


def tony_warm(cluster, workers: int, conf: dict) -> dict:
    """tony-jupyter on YARN, a kernel's later job: handed to the warm AM its previous job left
    (launcher/yarn/warmkeeper.py). Untimed before t0: the warm AM is started as after a job of this
    shape and waited for until it holds its containers (the user's think time between cells);
    untimed after: it is let go, so that no side after this one finds the cluster held."""
    from tony_jupyter.core import warmproc as switch
    from tony_jupyter.launcher.yarn import secure
    from tony_jupyter.launcher.yarn import warmkeeper as warm

    os.environ[switch.YARN_IDLE] = "600"
    try:
        _, spec = parse_job_args(f"--workers {workers} --backend yarn --memory 1g")
        bundle = make_bundle(WORKLOAD.read_text(), {}, extra=())
        warm.replenish(secure.connect(spec), spec, bundle, None)
        _wait_warm(workers)
        return tony("yarn", workers, conf)
    finally:
        os.environ.pop(switch.YARN_IDLE, None)
        warm.discard()


def _wait_warm(workers: int, timeout: float = 180) -> None:
    """Until the warm AM's spare executors all wait for a task (what a user's think time
    between two cells gives them)."""
    from tony_jupyter.launcher.yarn import warmkeeper as warm

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        w = warm.current()
        if w is not None and warm.ready(w) >= workers:
            return
        time.sleep(0.25)
    raise TimeoutError("the warm AM's spare executors did not come up")
