"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_editable.py NAME`): a
notebook's kernel there, in a venv holding the user's own package installed editable, runs a
%%tony cell on two workers, each of which imports that package; writes what came back (or the
error the cell raised) as JSON to NAME.json."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import edge_kernel  # beside this script
import userpkg  # the user's package, installed editable in the kernel's venv

CELL = """
import os, socket
import userpkg
where, path = userpkg.WHERE, os.path.realpath(userpkg.__file__)
host = socket.gethostname()
"""


def main(name: str) -> None:
    ip = edge_kernel.kernel(data=False)
    # (--keras3: no tf-keras check, as the cell imports no TensorFlow)
    flags = "--workers 2 --memory 512m --keras3 --pull where,path,host --no-tensorboard"
    try:
        job = ip.run_cell_magic("tony", f"{flags} --async --name {name}", CELL)
        job.result(timeout=900)
    except Exception as e:  # noqa: BLE001 - what the notebook's user would read, for the test
        out = {"error": str(e)}
    else:
        ns = ip.user_ns
        out = {"job_id": job.job_id, **{k: ns[k] for k in ("where", "path", "host")}}
    out = {**out, "kernel_host": socket.gethostname(), "kernel_where": userpkg.WHERE}
    Path(f"{name}.json").write_text(json.dumps(out))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
