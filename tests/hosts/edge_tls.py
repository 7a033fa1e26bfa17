"""Run on the edge host of an HTTPS-only several-host cluster (`devcluster up --hosts --tls`;
`devcluster exec edge -- VENV/bin/python edge_tls.py NAME`): a kernel there runs a one-worker
job (its venv packed by default, uploaded and localized over HTTPS, the CA bundle of
TONY_CA_BUNDLE verifying every host's name), opens the job's TensorBoard through the RM's web
proxy over HTTPS while it runs, then lets it end (a file in HDFS that the task waits for), and
writes what it saw (or the error it raised) as JSON to NAME.json."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import traceback
import uuid
from pathlib import Path

import edge_kernel  # beside this script
import requests

from tony_jupyter.data import filesystem
from tony_jupyter.launcher.client import find_job
from tony_jupyter.launcher.pickclient import open_client

RM = os.environ["TONY_DEVCLUSTER_RM_URL"]
CA = os.environ["TONY_CA_BUNDLE"]
USER = {"user.name": "root"}

# The task's host, the CA bundle its WebHDFS clients verify against, and a wait (bounded) for
# GO in HDFS, which it reads over HTTPS.
CELL = """
import socket, time
from tony_jupyter.core import tokens
from tony_jupyter.data import filesystem
fs, path = filesystem(GO)
deadline = time.monotonic() + 600
while fs.get_file_info(path).type.name == "NotFound" and time.monotonic() < deadline:
    time.sleep(0.5)
where, ca = socket.gethostname(), tokens.ca_bundle()
"""


def app(app_id: str) -> dict:
    r = requests.get(f"{RM}/ws/v1/cluster/apps/{app_id}", params=USER, verify=CA, timeout=10)
    return r.json()["app"]


def run(ip, out: dict) -> None:
    go = f"{os.environ['TONY_DEVCLUSTER_FS']}/user/root/edge-go-{uuid.uuid4().hex[:6]}"
    ip.user_ns["GO"] = go
    # (--keras3: no tf-keras check, as the cell imports no TensorFlow)
    flags = "--workers 1 --memory 1g --keras3 --pull where,ca --async --name edge-tls"
    job = ip.run_cell_magic("tony", flags, CELL)
    try:
        client = open_client(find_job(job.job_id))
        deadline = time.monotonic() + 900
        while not client.snapshot().endpoints.get("tensorboard"):
            if time.monotonic() > deadline:
                raise TimeoutError("the job never registered TensorBoard")
            time.sleep(0.5)
        tracking, page = app(job.job_id)["trackingUrl"], None
        while page is None and time.monotonic() < deadline:
            r = requests.get(tracking, verify=CA, timeout=20)
            page = r.text if r.ok and "tb-relative-root" in r.text else None
            time.sleep(0.5)
        runs = requests.get(tracking + "data/runs", verify=CA, timeout=20)
    finally:
        fs, path = filesystem(go)
        with fs.open_output_stream(path) as f:
            f.write(b"go")
    job.result(timeout=600)
    deadline = time.monotonic() + 120
    while (final := app(job.job_id))["state"] not in ("FINISHED", "FAILED", "KILLED"):
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    out.update(
        job_id=job.job_id,
        kernel_host=socket.gethostname(),
        where=ip.user_ns["where"],
        ca=ip.user_ns["ca"],
        tracking=tracking,
        page_ok=page is not None,
        runs=runs.json() if runs.ok else runs.status_code,
        final=[final["state"], final["finalStatus"]],
    )


def main(name: str) -> None:
    ip = edge_kernel.kernel(data=False)
    out: dict = {}
    t0 = time.monotonic()
    try:
        run(ip, out)
    except Exception:  # noqa: BLE001 - what the notebook's user would read, for the test
        out["error"] = traceback.format_exc()[-3000:]
    out["seconds"] = round(time.monotonic() - t0, 1)
    Path(f"{name}.json").write_text(json.dumps(out, default=str))
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
