"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_fault.py NAME`): a
notebook's kernel there runs one %%tony cell that trains with checkpoints (BackupAndRestore in
checkpoint_dir(), mirrored to HDFS), its worker in the gpu partition (queue gpu, label gpu:
worker2 or worker3) and its AM on worker1 (the queue's plain partition). One worker: two could
be put on both gpu hosts, and the one left would fail once its peer was cut off. Attempt 1
trains slowly (10 s an epoch), so that its processes outlive the cut and the new attempt's
start; later attempts train at 2 s an epoch. The test on the machine cuts the worker's host off
and plugs it back in; this side tells it when, through files beside the notebook:

- NAME.strike: attempt 1 has trained 2 epochs (its tasks' hosts, pids and containers, the AM's
  host and port, the checkpoint on HDFS): the test cuts the chief's host off now;
- NAME.detected: the AM has ended attempt 1 (the reason it gave; the checkpoint on HDFS then);
- NAME.resumed: attempt 2 runs, and HDFS holds a checkpoint two saves past the newest it held
  at the detection: attempt 2 wrote it, the old host still cut off;
- NAME.json: what the job pulled, its attempts, events, the times, and the checkpoint files on
  HDFS once it ended (--keep-staging keeps them) (or the cell's error).
"""

from __future__ import annotations

import json
import posixpath
import re
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import edge_kernel  # beside this script

from tony_jupyter.core import jobdir, tokens
from tony_jupyter.core.protocol import CHECKPOINT_FENCE
from tony_jupyter.launcher.client import find_job, jobs_dir
from tony_jupyter.launcher.pickclient import open_client

INTERVAL_S, MAX_MISSED, EPOCHS = 1.0, 8, 60
FLAGS = (
    "--workers 1 --queue gpu --node-label gpu --memory 1g --max-attempts 3 --keep-staging "
    "--pull first_epoch,attempt,resumed_at,where "
    f"--conf tony.task.heartbeat-interval-ms={INTERVAL_S * 1000:.0f} "
    f"--conf tony.task.max-missed-heartbeats={MAX_MISSED} "
    # Attempt 1's sidecars go on without an answer from the AM for 10 minutes (by default 16 s:
    # twice the AM's limit), so that what ends them once their host is back is the fence.
    "--conf tony.task.am-lost-sec=600"
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
        # Attempt 1 outlives the cut, attempt 2's start and its first checkpoints; attempt 2
        # outlives the old host's return and its fencing.
        time.sleep(10.0 if attempt == 1 else 2.0)

first_epoch = resumed_at = None
attempt = int(os.environ["TONY_ATTEMPT"])
where = socket.gethostname()
print(f"attempt {attempt} of {os.environ['TONY_TASK_ID']} started on {where}", flush=True)
"""
    + f"EPOCHS = {EPOCHS}\n"
    + edge_kernel.MWMS
    + """backup = tf.keras.callbacks.BackupAndRestore(backup_dir=tony_jupyter.checkpoint_dir())
history = model.fit(dataset, epochs=EPOCHS, steps_per_epoch=5, verbose=2,
                    callbacks=[backup, FirstEpoch(), tony_jupyter.progress()]).history
len(history["loss"])
"""
)


def hdfs_checkpoints(job_id: str, read_index: bool = True) -> dict:
    """The job's checkpoint directory on HDFS: the checkpoints whose files are there, the
    number of the newest, the fence (the newest attempt that claimed the directory), and with
    ``read_index`` the checkpoint the index names. Without it the NameNode alone answers: the
    index's block may be on the DataNode of a host just cut off, not yet known silent."""
    record = json.loads((jobs_dir() / job_id / "yarn.json").read_text())
    client = tokens.webhdfs_client(record["webhdfs_url"], record["user"])
    root = f"{record['staging']}/{jobdir.CHECKPOINTS}"
    out: dict = {"index": None, "number": None, "checkpoints": [], "fence": None, "at": time.time()}
    if client.status(root, strict=False) is None:
        return out
    found = set()
    for path, _, names in client.walk(root):
        for name in names:
            rel = posixpath.relpath(posixpath.join(path, name), root)
            if name == "checkpoint" and read_index:
                with client.read(posixpath.join(path, name)) as r:
                    named = re.search(r'model_checkpoint_path: "([^"]+)"', r.read().decode())
                if named:
                    out["index"] = posixpath.join(posixpath.dirname(rel), named.group(1))
            elif rel == CHECKPOINT_FENCE:
                out["fence"] = int(client.status(posixpath.join(path, name))["length"])
            elif not name.startswith(".") and (".index" in name or ".data-" in name):
                found.add(rel.split(".", 1)[0])
    out["checkpoints"] = sorted(found)
    numbers = [int(c.rsplit("-", 1)[-1]) for c in found if c.rsplit("-", 1)[-1].isdigit()]
    out["number"] = max(numbers, default=None)
    return out


def hdfs_now(job_id: str) -> dict:
    """:func:`hdfs_checkpoints` from the NameNode alone, asked again until it answers."""
    while True:
        try:
            return hdfs_checkpoints(job_id, read_index=False)
        except Exception:  # noqa: BLE001 - a NameNode call that timed out: asked again
            time.sleep(1)


def watch(job_id: str, name: str, seen: dict) -> None:
    """NAME.strike once attempt 1 has trained 2 epochs, NAME.detected once it has ended,
    NAME.resumed once attempt 2 has saved two checkpoints past the one HDFS held then."""
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
        if "strike" not in seen and snap.attempt == 1 and done >= 2:
            am = urlparse(client.am_url() or "")
            seen["strike"] = {
                "epoch": done,
                "am_host": am.hostname,
                "am_port": am.port,
                "tasks": {i: [t.host, t.pid, t.container] for i, t in tasks.items()},
                "hdfs": hdfs_now(job_id),
            }
            Path(f"{name}.strike").write_text(json.dumps(seen["strike"]))
        if "strike" in seen and "detected" not in seen and snap.attempts:
            ended = snap.attempts[0]
            seen["detected"] = {
                "time": time.time(),
                "task": ended.task,
                "reason": ended.reason,
                "hdfs": hdfs_now(job_id),
            }
            Path(f"{name}.detected").write_text(json.dumps(seen["detected"]))
        if "detected" in seen and snap.attempt >= 2:
            hdfs = hdfs_now(job_id)
            before = seen["detected"]["hdfs"]["number"] or 0
            if (hdfs["number"] or 0) >= before + 2:
                seen["resumed"] = {
                    "time": time.time(),
                    "hdfs": hdfs,
                    "tasks": {i: [t.host, t.pid, t.attempt] for i, t in tasks.items()},
                    "attempt": snap.attempt,
                }
                Path(f"{name}.resumed").write_text(json.dumps(seen["resumed"]))
                return
            time.sleep(0.5)  # a NameNode call each round
        time.sleep(0.1)


def main(name: str) -> None:
    ip = edge_kernel.kernel()
    seen: dict = {}
    try:
        job = ip.run_cell_magic("tony", f"{FLAGS} --async --no-tensorboard --name {name}", CELL)
        watcher = threading.Thread(target=watch, args=(job.job_id, name, seen), daemon=True)
        watcher.start()
        epochs = job.result(timeout=1500)
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
            "hdfs_at_end": hdfs_checkpoints(job.job_id),
            **{k: ns[k] for k in ("first_epoch", "attempt", "resumed_at", "where")},
            **seen,
        },
    )


def _report(name: str, out: dict) -> None:
    Path(f"{name}.json").write_text(json.dumps(out, default=str))
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
