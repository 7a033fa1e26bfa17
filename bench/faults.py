"""Fault tolerance, per fault: detection (the fault -> the AM fails the attempt), time to resume
(the fault -> the next attempt's first epoch begins, restored from checkpoint_dir()) and the
work lost (steps done when struck - the step the next attempt resumes at). Medians of --runs
(3) per fault.

Local backend: kill -9 and SIGSTOP of a worker. YARN: the same two, the worker's container
killed through the RM, kill -9 of the AM, and the crash of the node running it all
(DevCluster.kill_node, then start_node). The node crash needs a devcluster nobody else uses:
``python -m bench faults --own-devcluster`` starts one of its own in a temporary directory and
stops it at the end; otherwise (the running, shared devcluster, if any) it leaves it out.

The training is tests/test_fault_tolerance.py's: 2 workers, MultiWorkerMirroredStrategy,
BackupAndRestore into checkpoint_dir(), 8 epochs x 10 steps, struck once worker:0 reported
epoch 4 done; heartbeats as in the tests (local 0.5 s x 8, YARN 1 s x 10).

    .venv/bin/python -m bench faults [--runs 3] [--own-devcluster] [--faults kill-9-worker,...]
"""

from __future__ import annotations

import argparse
import getpass
import os
import shutil
import signal
import tempfile
import threading
import time

import psutil
import requests

from bench.lib.common import Context, column, log, median, use_devcluster_env
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import JobSnapshot, JobState, TaskView
from tony_jupyter.job import TonyJob, submit
from tony_jupyter.options import parse_job_args

NAME = "faults"
ABOUT = "per fault (kill -9, SIGSTOP; on YARN more): detection, time to resume, work lost"
TIMEOUT_S = 400.0
EPOCHS, STEPS_PER_EPOCH, STRIKE_AFTER_EPOCH = 8, 10, 4
HEARTBEATS = {"local": (500, 8), "yarn": (1000, 10)}  # interval ms, max missed: the tests'

CELL = f"""
import os, time
import tensorflow as tf
import tony_jupyter

class FirstEpoch(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        global first_epoch, resumed_at
        if first_epoch is None:
            first_epoch, resumed_at = epoch, time.time()

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.5)  # room to strike between checkpoints, as in the tests

class Trace(tf.keras.callbacks.Callback):  # when worker:0 finished each step (same host)
    step = 0

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if os.environ["TONY_TASK_ID"] == "worker:0":
            with open(TRACE, "a") as f:
                f.write(f"{{attempt}} {{self.step}} {{time.time()}}\\n")

first_epoch = resumed_at = None
attempt = int(os.environ["TONY_ATTEMPT"])
strategy = tf.distribute.MultiWorkerMirroredStrategy()
dataset = tf.data.Dataset.from_tensor_slices((X, y)).shuffle(2000, seed=0).repeat().batch(64)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((64,)),
                                 tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
backup = tf.keras.callbacks.BackupAndRestore(backup_dir=tony_jupyter.checkpoint_dir())
# Not the cell's value: pickling a History (it holds the model) reads MirroredVariables, a
# collective that hangs once the other worker has exited.
history = model.fit(dataset, epochs={EPOCHS}, steps_per_epoch={STEPS_PER_EPOCH}, verbose=0,
          callbacks=[backup, FirstEpoch(), Trace(), tony_jupyter.progress()])
"""


def _worker(snap: JobSnapshot) -> TaskView:
    (w,) = [t for t in snap.tasks if t.id == "worker:1"]
    return w


def _kill_9(snap, cluster):
    os.kill(_worker(snap).pid, signal.SIGKILL)  # a devcluster's NMs run on this host too


def _sigstop(snap, cluster):
    os.kill(_worker(snap).pid, signal.SIGSTOP)  # the task hangs; its heartbeat sidecar runs


def _yarn_kills_container(snap, cluster):
    cid = _worker(snap).container
    r = requests.post(
        f"{cluster.rm_url}/ws/v1/cluster/containers/{cid}/signal/FORCEFUL_SHUTDOWN",
        params={"user.name": getpass.getuser()},
        timeout=10,
    )
    r.raise_for_status()


def _kill_9_am(snap, cluster):
    got = requests.get(
        f"{cluster.rm_url}/ws/v1/cluster/apps/{snap.job_id}/appattempts", timeout=10
    ).json()
    container = got["appAttempts"]["appAttempt"][-1]["containerId"]
    (am,) = [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [])[1:3] == ["-m", "tony_jupyter.am"]
        and container in " ".join(p.info["cmdline"])
    ]
    am.send_signal(signal.SIGKILL)


def _node_crash(snap, cluster):
    cluster.kill_node("nm1")  # the default partition's one node: the AM and both workers


# name -> (strike, backends, extra flags); the AM's loss needs a second YARN application attempt.
FAULTS = {
    "kill-9-worker": (_kill_9, ("local", "yarn"), ""),
    "sigstop-worker": (_sigstop, ("local", "yarn"), ""),
    "yarn-kills-container": (_yarn_kills_container, ("yarn",), ""),
    "kill-9-am": (_kill_9_am, ("yarn",), "--conf tony.am.retry-count=1"),
    "node-crash": (_node_crash, ("yarn",), "--conf tony.am.retry-count=1"),
}


def _strike_when_trained(job: TonyJob, strike, cluster) -> dict:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        snap = job.client.snapshot()
        worker0, worker1 = snap.task("worker:0"), snap.task("worker:1")
        progress = (worker0.progress if worker0 else None) or {}
        done = progress.get("epoch_done", 0)
        if snap.attempt == 1 and done >= STRIKE_AFTER_EPOCH and worker1 and worker1.pid:
            at = time.time()  # the signal (or request) goes out next
            strike(snap, cluster)
            return {"at": at}
        if snap.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.KILLED):
            break
        time.sleep(0.05)
    raise TimeoutError("attempt 1 never reached the epoch to strike at")


def run_fault(backend: str, fault: str, cluster=None) -> dict:
    from sklearn.datasets import load_digits

    strike, _, extra = FAULTS[fault]
    interval_ms, max_missed = HEARTBEATS[backend]
    _, spec = parse_job_args(
        f"--workers 2 --backend {backend} --memory 1g --max-attempts 2 "
        "--pull first_epoch,attempt,resumed_at "
        f"--conf tony.task.heartbeat-interval-ms={interval_ms} "
        f"--conf tony.task.max-missed-heartbeats={max_missed} {extra}"
    )
    X, y = load_digits(return_X_y=True)
    trace_dir = tempfile.mkdtemp(prefix="tony-bench-faults-trace-")
    trace = os.path.join(trace_dir, "steps")
    ns = {"X": (X / 16.0).astype("float32"), "y": y, "TRACE": trace}
    job = TonyJob(submit(spec, make_bundle(CELL, ns)), namespace=ns)
    struck: dict = {}

    def striker():
        try:
            struck.update(_strike_when_trained(job, strike, cluster))
        except Exception as e:  # noqa: BLE001 - reported with the row
            struck["error"] = f"{type(e).__name__}: {e}"
        if fault == "node-crash" and "at" in struck:
            cluster.start_node("nm1")
            struck["node_back"] = time.time()

    t = threading.Thread(target=striker, daemon=True)
    t.start()
    try:
        snap = job.wait(TIMEOUT_S)
        t.join(TIMEOUT_S)
        events, _ = job.client.events(0)
        job.result(60)  # pulls first_epoch, attempt, resumed_at into ns; releases the AM
    finally:
        if job.state not in ("SUCCEEDED", "FAILED", "KILLED", "LOST"):
            job.kill()
        job.client.release()
        job.client.wait_am_exit(60)
        if fault == "node-crash" and cluster is not None and not cluster.is_running():
            cluster.start_node("nm1")
    if "error" in struck:
        raise RuntimeError(struck["error"])
    if snap.state != JobState.SUCCEEDED or ns["attempt"] != 2:
        raise RuntimeError(f"{job.job_id} {snap.state} in attempt {ns['attempt']}")
    failed = next(e for e in events if e.kind == "attempt" and e.data["state"] == "FAILED")
    with open(trace) as f:
        steps = [line.split() for line in f]
    shutil.rmtree(trace_dir)
    done = max(int(n) for a, n, t in steps if a == "1" and float(t) <= struck["at"])
    row = {
        "detect_s": failed.time - struck["at"],
        "resume_s": ns["resumed_at"] - struck["at"],
        "steps_done_when_struck": done,  # by worker:0, from its trace
        "resumed_epoch": ns["first_epoch"],
        "steps_lost": float(done - ns["first_epoch"] * STEPS_PER_EPOCH),
        "epochs_lost": (done - ns["first_epoch"] * STEPS_PER_EPOCH) / STEPS_PER_EPOCH,
        "reason": failed.data["reason"][:300],
    }
    if "node_back" in struck:
        row["node_back_s"] = struck["node_back"] - struck["at"]
    return row


def measure(quick: bool, cluster, runs: int | None = None, only=(), crash_nodes=False) -> dict:
    """``cluster``: a devcluster for the YARN faults (None: local only); the node crash only
    with ``crash_nodes`` (a cluster this part started itself)."""
    runs = runs or (1 if quick else 3)
    cases = [
        (backend, fault)
        for fault, (_, backends, _) in FAULTS.items()
        for backend in backends
        if (not only or fault in only)
        and (backend == "local" or (cluster is not None and not quick))
        and (fault != "node-crash" or crash_nodes)
        and (not quick or fault == "kill-9-worker")
    ]
    rows: dict[str, list[dict]] = {f"{b}/{f}": [] for b, f in cases}
    log(f"faults: {len(cases)} fault(s) x {runs} round(s)")
    for r in range(runs):  # round by round, so drift over the run hits every fault alike
        for backend, fault in cases:
            began = time.monotonic()
            try:
                row = run_fault(backend, fault, cluster)
            except Exception as e:  # noqa: BLE001 - a failed recovery is a finding, kept
                row = {"error": f"{type(e).__name__}: {e}"[:2000]}
            row["load_avg"] = round(os.getloadavg()[0], 2)
            rows[f"{backend}/{fault}"].append(row)
            log(
                f"  round {r + 1}/{runs} {backend}/{fault}: {_brief(row)} "
                f"({time.monotonic() - began:.0f} s)"
            )
    keys = ("detect_s", "resume_s", "epochs_lost", "steps_lost", "node_back_s")
    medians = {
        case: {k: median(column(got, k)) for k in keys if column(got, k)}
        for case, got in rows.items()
    }
    return {
        "runs": runs,
        "epochs": EPOCHS,
        "steps_per_epoch": STEPS_PER_EPOCH,
        "strike_after_epoch": STRIKE_AFTER_EPOCH,
        "heartbeats_ms_max_missed": HEARTBEATS,
        "medians": medians,
        "errors": {case: sum("error" in x for x in got) for case, got in rows.items()},
        "all": rows,
    }


def _brief(row: dict) -> str:
    if "error" in row:
        return "ERROR " + row["error"].splitlines()[0][:200]
    return ", ".join(
        f"{k}={row[k]:.1f}" for k in ("detect_s", "resume_s", "steps_lost") if k in row
    )


def _own_devcluster(root: str):
    """A devcluster of this run's own, on the first port offset whose ports are all free."""
    from tony_jupyter_devcluster import DevCluster, preflight
    from tony_jupyter_devcluster.config import MAX_PORT_OFFSET, Layout

    for offset in range(10000, MAX_PORT_OFFSET + 1, 10000):
        ports = Layout(root, offset).all_ports()  # type: ignore[arg-type]
        if not any(preflight.port_in_use(p) for p in ports):
            cluster = DevCluster(root, offset)  # type: ignore[arg-type]
            cluster.up()
            return cluster
    raise RuntimeError("no free port offset for a devcluster")


def _fault_list(text: str) -> tuple[str, ...]:
    only = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in only if x not in FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault(s) {', '.join(unknown)}; choose from {', '.join(FAULTS)}"
        )
    return only


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--faults", type=_fault_list, default=(), help=f"comma-separated: {', '.join(FAULTS)}"
    )
    p.add_argument(
        "--own-devcluster",
        action="store_true",
        help="start a devcluster of its own (stopped at the end) and add the node crash",
    )


def run(ctx: Context) -> dict:
    """On the running devcluster (if any) without the node crash; with --own-devcluster (not
    with --quick) on one of its own, the node crash included."""
    if not ctx.args.own_devcluster or ctx.quick:
        return measure(ctx.quick, ctx.cluster, ctx.runs, ctx.args.faults)
    env = dict(os.environ)
    log("faults: starting a devcluster of its own (the node crash needs one)")
    cluster = _own_devcluster(tempfile.mkdtemp(prefix="tony-bench-faults-"))
    try:
        use_devcluster_env(cluster)
        return measure(False, cluster, ctx.runs, ctx.args.faults, crash_nodes=True)
    finally:
        cluster.down()
        shutil.rmtree(cluster.dir, ignore_errors=True)
        os.environ.clear()  # the parts after this one see the shared devcluster again
        os.environ.update(env)
