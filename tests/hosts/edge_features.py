"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_features.py NAME`): one
notebook's kernel there runs several short jobs on the cluster, one feature each, and writes
what each showed (or the error it raised) as JSON to NAME.json:

- ``ps``: ParameterServerStrategy training (a chief, a worker, a ps) and ``--pull``;
- ``shard``: ``--shard arr`` (a NumPy array) over two workers, and ``tony_jupyter.data.dataset("hdfs://...")``
  of Parquet the kernel wrote to HDFS, read by each worker (its share);
- ``session``: the kernel's warm AM (``TONY_JUPYTER_WARM_YARN``) after a plain job, and a
  ``%tony session`` of that job's shape handed to it, keeping state between two cells;
- ``tensorboard``: a job's TensorBoard through the ResourceManager's web proxy (its tracking
  URL), from the edge;
- ``history``: the PS job listed, its status and a task's log read from the HDFS history in
  another, empty TONY_JUPYTER_HOME (another kernel), after its AM is gone.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
import uuid
from pathlib import Path

import edge_kernel  # beside this script
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import requests

from tony_jupyter import commands
from tony_jupyter.data import filesystem
from tony_jupyter.launcher.client import find_job
from tony_jupyter.launcher.joblist import all_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn import warmkeeper as warm

RM = os.environ["TONY_DEVCLUSTER_RM_URL"]
USER = {"user.name": "root"}

PS = """
import tensorflow as tf
import tony_jupyter
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                         task_index=resolver.task_id, protocol="grpc", start=True).join()
strategy = tf.distribute.ParameterServerStrategy(resolver)

def dataset_fn(input_context):
    return tf.data.Dataset.from_tensor_slices((X, y)).shuffle(512).repeat().batch(64)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((16,)), tf.keras.layers.Dense(4)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=5)
history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=2,
                    steps_per_epoch=10, verbose=2).history
ps_devices = len(strategy.extended.parameter_devices)
losses = history["loss"]
"""

# Every worker reports its share through a file in its own container, printed to its log.
SHARD = """
import json, os, socket
from tony_jupyter import data
ids = [int(i) for b in data.dataset(URL, columns=["id"], batch_size=50)
       for i in b["id"].numpy().tolist()]
mine = {"task": os.environ["TONY_TASK_ID"], "host": socket.gethostname(),
        "arr": sorted((arr[:, 0] // 2).tolist()), "hdfs": sorted(ids)}
print("SHARE " + json.dumps(mine), flush=True)
"""

TENSORBOARD = """
import time
import tensorflow as tf
import tony_jupyter
model = tf.keras.Sequential([tf.keras.layers.Input((16,)), tf.keras.layers.Dense(4)])
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(X, y, epochs=2, batch_size=64, verbose=0, callbacks=[tony_jupyter.progress()])
time.sleep(40)  # room for the kernel to open TensorBoard while the job runs
"""


def ps(ip, out: dict) -> None:
    flags = "--chief --workers 1 --ps 1 --memory 768m --no-tensorboard --pull ps_devices,losses"
    job = ip.run_cell_magic("tony", f"{flags} --async --name edge-ps", PS)
    job.result(timeout=900)
    app = edge_kernel.wait_app_end(job.job_id)
    losses = ip.user_ns["losses"]
    out["ps"] = {
        "job_id": job.job_id,
        "ps_devices": ip.user_ns["ps_devices"],
        "losses_finite": all(math.isfinite(v) for v in losses),
        "epochs": len(losses),
        "final": [app["state"], app["finalStatus"]],
    }


def shard(ip, out: dict, tag: str) -> None:
    url = f"{os.environ['TONY_DEVCLUSTER_FS']}/user/root/edge-data-{tag}"
    fs, path = filesystem(url)
    for i in range(2):  # two files: one per worker
        table = pa.table({"id": np.arange(i * 150, (i + 1) * 150)})
        pq.write_table(table, f"{path}/part-{i}.parquet", filesystem=fs)
    n = 1001
    ip.user_ns.update(URL=url, arr=np.arange(n * 2).reshape(n, 2))
    job = ip.run_cell_magic(
        "tony", "--workers 2 --no-tensorboard --shard arr --async --name edge-shard", SHARD
    )
    job.result(timeout=900)
    client = open_client(find_job(job.job_id))
    shares = []
    for task in ("worker:0", "worker:1"):
        text, _ = client.logs(task)
        line = next(x for x in text.splitlines() if x.startswith("SHARE "))
        shares.append(json.loads(line.removeprefix("SHARE ")))
    out["shard"] = {"n": n, "hdfs_rows": 300, "shares": shares}


def session(ip, out: dict) -> None:
    from tony_jupyter import session as sessions

    # A warm AM follows a job (not one with --shard: its AM is the job's own), of its shape:
    # a session of the same shape is handed to it.
    os.environ[warm.warm.YARN_IDLE] = "300"
    ip.run_cell_magic("tony", "--workers 2 --no-tensorboard", "import os\nos.getpid()")
    deadline = time.monotonic() + 180
    while (spare := warm.current()) is None or warm.ready(spare) < 2:
        if time.monotonic() > deadline:
            raise TimeoutError("the warm AM's two spare executors never came up")
        time.sleep(0.5)
    ip.run_line_magic("tony", "session start --workers 2 --no-tensorboard")
    try:
        handed = sessions.current().job.job_id == spare.app_id
        first = ip.run_cell_magic("tony", "", "n = 41")
        second = ip.run_cell_magic("tony", "", "n + 1")
    finally:
        ip.run_line_magic("tony", "session stop")
        os.environ.pop(warm.warm.YARN_IDLE, None)
        warm.discard()
    app = edge_kernel.wait_app_end(spare.app_id)
    out["session"] = {
        "handed_to_warm_am": handed,
        "cells": [first, second],
        "warm_app_end": app["state"],
    }


def tensorboard(ip, out: dict) -> None:
    job = ip.run_cell_magic("tony", "--workers 1 --async --name edge-tb", TENSORBOARD)
    client = open_client(find_job(job.job_id))
    deadline = time.monotonic() + 300
    while not client.snapshot().endpoints.get("tensorboard"):
        if time.monotonic() > deadline:
            raise TimeoutError("the job never registered TensorBoard")
        time.sleep(0.5)
    app = requests.get(f"{RM}/ws/v1/cluster/apps/{job.job_id}", params=USER, timeout=10)
    tracking = app.json()["app"]["trackingUrl"]
    runs = None
    while runs is None and time.monotonic() < deadline:
        r = requests.get(tracking + "data/runs", timeout=10)
        runs = r.json() if r.ok and r.headers.get("content-type", "").startswith("app") else None
        time.sleep(0.5)
    page = requests.get(tracking, timeout=10)
    job.result(timeout=300)
    out["tensorboard"] = {
        "tracking": tracking,
        "runs": runs,
        "page_ok": page.ok and "tb-relative-root" in page.text,
        "final": edge_kernel.wait_app_end(job.job_id)["finalStatus"],
    }


def history(out: dict, job_id: str, home: Path) -> None:
    os.environ["TONY_JUPYTER_HOME"] = str(home)  # another kernel's: nothing of this one's
    listing = all_jobs()
    row = next((r for r in listing.rows if r["job_id"] == job_id), {})
    out["history"] = {
        "where": listing.where.get(job_id),
        "state": row.get("state"),
        "name": row.get("name"),
        "status": commands.status_text(job_id),
        "log": commands.logs_text(job_id, "chief:0")[-1500:],
    }


def main(name: str) -> None:
    ip = edge_kernel.kernel()
    out: dict = {}
    tag = uuid.uuid4().hex[:6]
    steps = [
        ("ps", lambda: ps(ip, out)),
        ("shard", lambda: shard(ip, out, tag)),
        ("session", lambda: session(ip, out)),
        ("tensorboard", lambda: tensorboard(ip, out)),
        ("history", lambda: history(out, out["ps"]["job_id"], Path(f"{name}-other-home"))),
    ]
    for step, run in steps:
        t0 = time.monotonic()
        try:
            run()
        except Exception:  # noqa: BLE001 - reported per feature, for the test to show
            out[step] = {"error": traceback.format_exc()[-3000:]}
        out[step]["seconds"] = round(time.monotonic() - t0, 1)
        print(f"{step}: {json.dumps(out[step], default=str)[:300]}", flush=True)
    Path(f"{name}.json").write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
