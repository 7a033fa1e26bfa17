"""Cell -> every task running user code on a Kerberized devcluster vs a plain one, side by
side in the same run (medians): what SPNEGO logins, delegation tokens and token-carrying
containers cost. Needs both clusters up (skipped otherwise, and with --quick):

    .venv/bin/tony-jupyter devcluster up --dir /tmp/plain
    .venv/bin/tony-jupyter devcluster up --secure --dir /tmp/secure --port-offset 30000
    .venv/bin/python -m bench secure_startup --plain /tmp/plain --secure /tmp/secure [--runs 5]

``--secure`` may name a cluster of any other shape (`up --ha --tls`, `--tls`, `--ha`): the
result's ``shape`` says which, and its jobs run as alice only where it is Kerberized.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.lib.common import Context, interleave, log, ratio
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher.yarn import backend as yarn_backend
from tony_jupyter.options import parse_job_args

NAME = "secure_startup"
ABOUT = "cell -> user code on the Kerberized (or HA, TLS) devcluster vs the plain one (same run)"
CELL = (
    "import os, time\n"
    "open(os.path.join(OUT, os.environ['TASK_INDEX']), 'w').write(repr(time.time()))\n"
)
_ENV_KEYS = ("KRB5_CONFIG", "KRB5CCNAME", "HADOOP_USER_NAME", "TONY_CA_BUNDLE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plain", default=os.environ.get("TONY_BENCH_PLAIN_DIR"))
    p.add_argument("--secure", default=os.environ.get("TONY_BENCH_SECURE_DIR"))
    p.add_argument("--secure-workers", type=int, default=1)


def _cluster(path: str | None):
    from tony_jupyter_devcluster import DevCluster

    if not path:
        return None
    try:
        dc = DevCluster(Path(path))
        return dc if dc.is_running() else None
    except Exception:  # noqa: BLE001 - not a cluster dir: simply not there
        return None


def _use(dc, user: str | None) -> None:
    for k in _ENV_KEYS:
        os.environ.pop(k, None)
    os.environ.update(dc.env(user) if user else dc.env())


def _once(dc, user: str | None, workers: int) -> dict:
    _use(dc, user)
    out = Path(tempfile.mkdtemp())
    _, spec = parse_job_args(f"--workers {workers} --memory 512m --backend yarn --no-tensorboard")
    bundle = make_bundle(CELL, {"OUT": str(out)})
    t0 = time.time()
    record = yarn_backend.submit(spec, bundle)
    job = TonyJob(record)
    deadline = time.monotonic() + 180
    while True:
        files = list(out.iterdir())
        try:
            if len(files) == workers:
                t_user = max(float(f.read_text()) for f in files)
                break
        except ValueError:
            pass  # a file made but not written yet
        if time.monotonic() > deadline:
            raise TimeoutError("tasks did not start")
        time.sleep(0.005)
    job.wait(120)
    job.client.release()
    job.client.wait_am_exit(60)
    return {"total_s": t_user - t0}


def run(ctx: Context) -> dict:
    plain, secure = _cluster(ctx.args.plain), _cluster(ctx.args.secure)
    if ctx.quick or plain is None or secure is None:
        return {"skipped": "needs a plain and a secure devcluster up (--plain DIR --secure DIR)"}
    workers, runs = ctx.args.secure_workers, ctx.runs or 5
    user = "alice" if secure.security is not None else None
    layout = secure.layout
    flags = (("secure", user), ("ha", layout.ha), ("tls", layout.tls), ("hosts", layout.hosts))
    shape = "+".join(name for name, on in flags if on) or "plain"
    saved = dict(os.environ)
    try:
        rows = interleave(
            runs,
            {
                "plain": lambda: _once(plain, None, workers),
                "secure": lambda: _once(secure, user, workers),
            },
            log=log,
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
    med = {
        k: statistics.median(r["total_s"] for r in v if "total_s" in r) if v else None
        for k, v in rows.items()
    }
    return {
        "shape": shape,
        "workers": workers,
        "runs": runs,
        "median_s": med,
        "secure_over_plain": ratio(med.get("secure"), med.get("plain")),
        "all": rows,
    }
