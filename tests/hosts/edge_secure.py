"""Run on the edge host of a Kerberized several-host cluster (`devcluster exec edge -- VENV/bin/
python edge_secure.py MODE NAME`), as a notebook's kernel there whose user has (or has not) run
``kinit``; writes what it saw as JSON to NAME.json:

- ``job``: one %%tony MultiWorkerMirroredStrategy cell (2 workers, a small Keras model, a
  checkpoint each epoch in ``tony_jupyter.checkpoint_dir()``, mirrored to HDFS with the job's
  delegation token); the HDFS token's kind and service, the checkpoint files the chief found in
  HDFS, each task's host (from its log), the application's end as alice sees it, and the time
  from the cell to its user code (a first job's includes packing and shipping the venv);
- ``noticket``: the same cell, refused before anything is submitted (the error it raised);
- ``left``: what alice has left on the cluster of the applications named NAME (live ones) and
  in her staging root (``application_*`` dirs), through SPNEGO with her ticket.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import edge_kernel  # beside this script
import requests
from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

from tony_jupyter.launcher.client import find_job, jobs_dir
from tony_jupyter.launcher.pickclient import open_client

RM = os.environ["TONY_DEVCLUSTER_RM_URL"]
WEBHDFS = os.environ["TONY_DEVCLUSTER_WEBHDFS_URL"]

CELL = (
    """
import time
started = time.time()
import os, socket
import tensorflow as tf
import tony_jupyter
from tony_jupyter.core import tokens
from tony_jupyter.core.protocol.env import ExecutorEnv
from tony_jupyter.core.tokens import Token
print("HOST", socket.gethostname(), flush=True)
"""
    + edge_kernel.MWMS
    + """save = tf.keras.callbacks.ModelCheckpoint(
    os.path.join(tony_jupyter.checkpoint_dir(), "ckpt-{epoch}.weights.h5"), save_weights_only=True)
loss = model.fit(dataset, epochs=2, steps_per_epoch=5, verbose=0, callbacks=[save])
loss = loss.history["loss"][-1]
replicas = strategy.num_replicas_in_sync
token = Token.decode(tokens.hdfs_token())
token_kind, token_service = token.kind, token.service
# The chief mirrors checkpoint_dir() to HDFS every 0.5 s: wait for both epochs' files there.
hdfs = tokens.webhdfs_client(os.environ["TONY_WEBHDFS_URL"], None)
remote = os.environ[ExecutorEnv.var("checkpoint_remote")]
deadline = time.monotonic() + 30
while True:
    in_hdfs = sorted(f for f in hdfs.list(remote) if f.startswith("ckpt-"))
    if len(in_hdfs) >= 2 or time.monotonic() > deadline:
        break
    time.sleep(0.5)
"""
)
PULL = "started,loss,replicas,token_kind,token_service,in_hdfs"


def _spnego() -> requests.Session:
    """Alice's REST session from her ticket cache (``KRB5CCNAME``), as a shell's curl would."""
    http = requests.Session()
    http.auth = HTTPSPNEGOAuth(mutual_authentication=OPTIONAL)
    return http


def job(name: str) -> dict:
    ip = edge_kernel.kernel()
    flags = f"--workers 2 --memory 1g --pull {PULL} --async --no-tensorboard --name {name}"
    t0 = time.time()
    try:
        handle = ip.run_cell_magic("tony", flags, CELL)
        handle.result(timeout=900)
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        return {"error": str(e), "seconds": time.time() - t0}
    seconds = time.time() - t0
    record = json.loads((jobs_dir() / handle.job_id / "yarn.json").read_text())
    client = open_client(find_job(handle.job_id))
    hosts = {}
    for task in ("worker:0", "worker:1"):
        text, _ = client.logs(task)
        hosts[task] = next(x.split()[1] for x in text.splitlines() if x.startswith("HOST "))
    app = edge_kernel.wait_app_end(handle.job_id, http=_spnego())
    return {
        "job_id": handle.job_id,
        "seconds": seconds,
        "cell_to_user_code_s": ip.user_ns["started"] - t0,
        "pack_env": record["pack_env"],
        "task_hosts": hosts,
        "app": {k: app[k] for k in ("user", "state", "finalStatus", "amHostHttpAddress")},
        **{k: ip.user_ns[k] for k in PULL.split(",")},
    }


def noticket(name: str) -> dict:
    ip = edge_kernel.kernel(data=False)
    try:
        ip.run_cell_magic("tony", f"--workers 1 --no-tensorboard --name {name}", "1 + 1\n")
    except Exception as e:  # noqa: BLE001 - the message the user reads
        return {"error": str(e), "type": type(e).__name__}
    return {"submitted": True}


def left(name: str) -> dict:
    http = _spnego()
    got = http.get(f"{RM}/ws/v1/cluster/apps", params={"user": "alice"}, timeout=10).json()
    apps = (got.get("apps") or {}).get("app") or []
    live = [
        a["id"]
        for a in apps
        if a["name"] == name and a["state"] not in ("FINISHED", "FAILED", "KILLED")
    ]
    r = http.get(
        f"{WEBHDFS}/webhdfs/v1/user/alice/.tony-jupyter", params={"op": "LISTSTATUS"}, timeout=10
    )
    listing = r.json().get("FileStatuses", {}).get("FileStatus", []) if r.ok else []
    staged = [s["pathSuffix"] for s in listing if s["pathSuffix"].startswith("application_")]
    return {"status": r.status_code, "apps": len(apps), "live": live, "staged": staged}


def main(mode: str, name: str) -> None:
    modes = {"job": job, "noticket": noticket, "left": left}
    out = {"kernel_host": socket.gethostname(), **modes[mode](name)}
    Path(f"{name}.json").write_text(json.dumps(out))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
