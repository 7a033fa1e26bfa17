"""Run on the edge host of an `up --hosts --ha` cluster (`devcluster exec edge -- VENV/bin/python
edge_ha.py DIR NAME`): a notebook's kernel there runs one %%tony cell that trains with
checkpoints mirrored to HDFS on the nameservice; while it trains, this side kills the active
NameNode (on master or master2), then the active ResourceManager, as `devcluster failover` does
(from the edge: only a host reaches the masters), and times the first call of the notebook's own
clients that the new active one answers. After the job: `%tony list` and `%tony status` through
the new active RM, the job's AM attempts, and the killed masters started again as standbys.
What it saw goes to NAME.json (or the cell's error)."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import edge_kernel  # beside this script
from IPython.utils.capture import capture_output

from tony_jupyter.core.hadoopconf import HadoopConf
from tony_jupyter.launcher.client import find_job, jobs_dir
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn.rm import RMClient
from tony_jupyter.launcher.yarn.staging import Staging
from tony_jupyter_devcluster import DevCluster, failover
from tony_jupyter_devcluster.config import NODEMANAGERS

# One worker: what is under test is the masters' failover (tests/ha/test_ha_jobs.py says why
# not two). 1.5 s after each epoch, so that it still trains, and mirrors checkpoints to HDFS,
# through both failovers; the NameNode is struck after epoch 3, the RM 5 epochs after that.
STEPS_PER_EPOCH, EPOCHS = 10, 14
STRIKES = (("nn", 3), ("rm", 8))
FLAGS = "--workers 1 --memory 1g --max-attempts 2 --pull first_epoch,attempt"
CELL = (
    """
import os, time
import tensorflow as tf
import tony_jupyter

class FirstEpoch(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        global first_epoch
        if first_epoch is None:
            first_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(1.5)  # room for each failover between checkpoints

first_epoch = None
attempt = int(os.environ["TONY_ATTEMPT"])
"""
    + edge_kernel.MWMS
    + f"""backup = tf.keras.callbacks.BackupAndRestore(backup_dir=tony_jupyter.checkpoint_dir())
history = model.fit(dataset, epochs={EPOCHS}, steps_per_epoch={STEPS_PER_EPOCH}, verbose=2,
                    callbacks=[backup, FirstEpoch(), tony_jupyter.progress()]).history
len(history["loss"])
"""
)


def first_call(call, killed_at: float, timeout: float = 120.0) -> float:
    """Seconds from the kill to the first call through the notebook's client that succeeds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            call()
            return time.time() - killed_at
        except Exception:  # the masters are changing: asked again
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def strike(dc: DevCluster, job_id: str, seen: dict) -> None:
    """Each of STRIKES once attempt 1's worker:0 has trained that many epochs."""
    conf = HadoopConf.load()
    calls = {
        "nn": Staging(conf.webhdfs, conf.user, conf.default_fs).list_jobs,
        "rm": lambda: RMClient(conf.rm, conf.user).app(job_id),
    }
    client = open_client(find_job(job_id))
    for kind, at_epoch in STRIKES:
        while True:
            try:
                snap = client.snapshot()
            except Exception:  # noqa: BLE001 - the AM not up yet, or the RM changing
                time.sleep(0.2)
                continue
            worker = snap.task("worker:0")
            done = ((worker.progress if worker else None) or {}).get("epoch_done", 0)
            if snap.attempt == 1 and done >= at_epoch:
                break
            if snap.attempt != 1 or str(snap.state) in ("SUCCEEDED", "FAILED", "KILLED"):
                seen[kind] = {"error": f"attempt {snap.attempt}, {snap.state}, epoch {done}"}
                return
            time.sleep(0.1)
        done_failover = failover.failover(dc, kind, restart=False)
        seen[kind] = {
            "epoch": done,
            "killed": done_failover.killed,
            "active": done_failover.active,
            "to_active_s": done_failover.seconds,
            "first_call_s": first_call(calls[kind], done_failover.killed_at),
        }


def _striking(dc: DevCluster, job_id: str, seen: dict) -> None:
    try:
        strike(dc, job_id, seen)
    except Exception as e:  # noqa: BLE001 - reported in NAME.json, the test fails on it
        seen["strike_error"] = repr(e)


def am_failed_over(dc: DevCluster, app_id: str) -> bool:
    """Whether the AM's own HDFS client (JPype) failed over by itself (its JVM's log)."""
    for nm in NODEMANAGERS:
        for path in (dc.layout.nm_log_dir(nm) / app_id).glob("*_000001/am.stderr"):
            return "Trying to failover" in path.read_text(errors="replace")
    return False


def main(cluster_dir: str, name: str) -> None:
    dc = DevCluster(Path(cluster_dir))
    ip = edge_kernel.kernel()
    seen: dict = {}
    t0 = time.monotonic()
    try:
        job = ip.run_cell_magic("tony", f"{FLAGS} --async --no-tensorboard --name {name}", CELL)
        striker = threading.Thread(target=_striking, args=(dc, job.job_id, seen), daemon=True)
        striker.start()
        epochs = job.result(timeout=1500)
        striker.join(300)
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        _report(name, {"kernel_host": socket.gethostname(), "error": str(e), **seen})
        return
    out: dict = {"kernel_host": socket.gethostname(), "job_id": job.job_id, **seen}
    out["seconds"] = time.monotonic() - t0
    ns = ip.user_ns
    out.update(epochs_run=epochs, first_epoch=ns["first_epoch"], attempt=ns["attempt"])
    out["state"] = str(open_client(find_job(job.job_id)).snapshot().state)
    # The notebook's commands, through whichever RM is active now.
    with capture_output() as listed:
        ip.run_line_magic("tony", "list")
    with capture_output() as status:
        ip.run_line_magic("tony", f"status {job.job_id}")
    out.update(list=listed.stdout, status=status.stdout)
    deadline = time.monotonic() + 120
    while True:  # the cell's result comes back before the AM has unregistered
        app = RMClient(HadoopConf.load().rm, HadoopConf.load().user).app(job.job_id) or {}
        if app.get("state") in ("FINISHED", "FAILED", "KILLED") or time.monotonic() > deadline:
            break
        time.sleep(1)
    out["final"] = [app.get("state"), app.get("finalStatus")]
    attempts = dc.http.get(
        f"{dc.rm_url}/ws/v1/cluster/apps/{job.job_id}/appattempts", timeout=10
    ).json()["appAttempts"]["appAttempt"]
    out["am_attempts"] = len(attempts)
    out["am_failed_over"] = am_failed_over(dc, job.job_id)
    out["staged_via"] = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())[
        "default_fs"
    ]
    for kind in ("nn", "rm"):  # each pair whole again, as `devcluster failover` leaves it
        if "killed" in seen.get(kind, {}):
            failover.start_standby(dc, seen[kind]["killed"])
    _report(name, out)


def _report(name: str, out: dict) -> None:
    Path(f"{name}.json").write_text(json.dumps(out, default=str))
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
