"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_fault.py NAME`): a
notebook's kernel there runs one %%tony cell that trains with checkpoints (BackupAndRestore in
checkpoint_dir(), mirrored to HDFS), its two workers on worker2 (queue gpu, label gpu) and its AM
on worker1 (the queue's plain partition). The test on the machine cuts worker2's link and plugs
it back in; this side tells it when, through files beside the notebook:

- NAME.strike: attempt 1 has trained 3 epochs (its tasks' hosts, pids and containers, the AM's
  host): the test cuts the link now;
- NAME.detected: the AM has ended attempt 1 (the reason it gave): the test plugs it back in;
- NAME.json: what the job pulled, its attempts, events and the times (or the cell's error).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import edge_kernel  # beside this script

from tony_jupyter.launcher.client import find_job, jobs_dir
from tony_jupyter.launcher.clients import open_client

INTERVAL_S, MAX_MISSED = 1.0, 8
FLAGS = (
    "--workers 2 --queue gpu --node-label gpu --memory 1g --max-attempts 3 "
    "--pull first_epoch,attempt,resumed_at,where "
    f"--conf tony.task.heartbeat-interval-ms={INTERVAL_S * 1000:.0f} "
    f"--conf tony.task.max-missed-heartbeats={MAX_MISSED}"
    # A node's first container of a job from the edge unpacks the venv (about 2 GB, TensorFlow)
    # for minutes on 2 busy cores: the default registration timeout holds, as it counts from
    # the container's leaving localization (am/yarn/localizing.py).
)
CELL = (
    """
import os, socket, time
import tensorflow as tf
import tony_jupyter

class FirstEpoch(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        global first_epoch, resumed_at
        if first_epoch is None:
            first_epoch, resumed_at = epoch, time.time()

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.5)  # an attempt outlasts the cut: 40 epochs of about a second

first_epoch = resumed_at = None
attempt = int(os.environ["TONY_ATTEMPT"])
where = socket.gethostname()
print(f"attempt {attempt} of {os.environ['TONY_TASK_ID']} started on {where}", flush=True)
"""
    + edge_kernel.MWMS
    + """backup = tf.keras.callbacks.BackupAndRestore(backup_dir=tony_jupyter.checkpoint_dir())
history = model.fit(dataset, epochs=40, steps_per_epoch=5, verbose=2,
                    callbacks=[backup, FirstEpoch(), tony_jupyter.progress()]).history
len(history["loss"])
"""
)


def watch(job_id: str, name: str, seen: dict) -> None:
    """NAME.strike once attempt 1 has trained 3 epochs, NAME.detected once it has ended."""
    client = open_client(find_job(job_id))
    while True:
        try:
            snap = client.snapshot()
        except Exception:  # noqa: BLE001 - the AM not up yet: asked again
            time.sleep(0.2)
            continue
        tasks = {t.id: t for t in snap.tasks}
        done = ((tasks["worker:0"].progress if "worker:0" in tasks else None) or {}).get(
            "epoch_done", 0
        )
        if "strike" not in seen and snap.attempt == 1 and done >= 3:
            seen["strike"] = {
                "epoch": done,
                "am_host": urlparse(client.am_url() or "").hostname,
                "tasks": {i: [t.host, t.pid, t.container] for i, t in tasks.items()},
            }
            Path(f"{name}.strike").write_text(json.dumps(seen["strike"]))
        if "strike" in seen and snap.attempts:
            ended = snap.attempts[0]
            seen["detected"] = {"time": time.time(), "task": ended.task, "reason": ended.reason}
            Path(f"{name}.detected").write_text(json.dumps(seen["detected"]))
            return
        time.sleep(0.1)


def main(name: str) -> None:
    ip = edge_kernel.kernel()
    seen: dict = {}
    try:
        job = ip.run_cell_magic("tony", f"{FLAGS} --async --no-tensorboard --name {name}", CELL)
        watcher = threading.Thread(target=watch, args=(job.job_id, name, seen), daemon=True)
        watcher.start()
        epochs = job.result(timeout=1200)
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        _report(name, {"kernel_host": socket.gethostname(), "error": str(e), **seen})
        return
    client = open_client(find_job(job.job_id))
    snap = client.snapshot()
    events, _ = client.events(0)
    ns = ip.user_ns
    record = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())
    _report(
        name,
        {
            "kernel_host": socket.gethostname(),
            "job_id": job.job_id,
            "state": str(snap.state),
            "snapshot_attempt": snap.attempt,
            "attempts": [[a.attempt, a.task, a.reason] for a in snap.attempts],
            "events": [e.to_json() for e in events if str(e.kind) == "attempt"],
            "tasks": {t.id: [t.host, t.pid, t.attempt] for t in snap.tasks},
            "epochs_run": epochs,
            "pack_env": record["pack_env"],
            **{k: ns[k] for k in ("first_epoch", "attempt", "resumed_at", "where")},
            **seen,
        },
    )


def _report(name: str, out: dict) -> None:
    Path(f"{name}.json").write_text(json.dumps(out, default=str))
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
