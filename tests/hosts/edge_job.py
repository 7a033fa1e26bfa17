"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_job.py NAME`): a
notebook's kernel there, in a venv, runs one %%tony MultiWorkerMirroredStrategy cell on the
cluster with no flag for its Python (the venv goes with the job by default: the nodes are other
hosts), and writes what the job reported as JSON to NAME.json (or the error the cell raised):
a file, as the job's own output on stdout may share a line with it."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import edge_kernel  # beside this script

from tony_jupyter.launcher.client import jobs_dir

CELL = (
    """
import os, socket, sys
import tensorflow as tf
"""
    + edge_kernel.MWMS
    + """loss = model.fit(dataset, epochs=2, steps_per_epoch=5, verbose=0).history["loss"][-1]
replicas = strategy.num_replicas_in_sync
where = socket.gethostname()
python = os.path.realpath(sys.executable)
"""
)


def main(name: str) -> None:
    ip = edge_kernel.kernel()
    t0 = time.monotonic()
    flags = "--workers 2 --memory 1g --pull loss,replicas,where,python"
    try:
        job = ip.run_cell_magic("tony", f"{flags} --async --no-tensorboard --name {name}", CELL)
        job.result(timeout=900)
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        out = {"kernel_host": socket.gethostname(), "error": str(e)}
        _report(name, {**out, "seconds": time.monotonic() - t0})
        return
    ns = ip.user_ns
    record = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())
    _report(
        name,
        {
            "kernel_host": socket.gethostname(),
            "job_id": job.job_id,
            "seconds": time.monotonic() - t0,
            "pack_env": record["pack_env"],
            **{k: ns[k] for k in ("loss", "replicas", "where", "python")},
        },
    )


def _report(name: str, out: dict) -> None:
    Path(f"{name}.json").write_text(json.dumps(out))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
