"""Part 4: what a YARN submission stages on HDFS, bytes and seconds, for the first and second
submission of the same cell; beside a raw WebHDFS upload of the same files, and the size of the
Python environment a packing launcher (TonY's --python_venv) would ship instead.

tony-jupyter's YARN backend packs no environment: the AM and executors run ``spec.python``
(default: this interpreter's path), which must exist on every node. So both submissions stage
the same few small files and zero environment bytes."""

from __future__ import annotations

import getpass
import os
import sys
import time
from pathlib import Path

import requests

from bench.common import log, median, ratio
from tony_jupyter.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher.yarn import backend as yarn_backend
from tony_jupyter.launcher.yarn import staging as yarn_staging
from tony_jupyter.options import parse_job_args

NAME = "staging"
CELL = "import os\nos.getpid()\n"


class Recorder:
    """Wraps Staging.upload (without changing what it does) to count files, bytes, seconds."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self._orig = yarn_staging.Staging.upload

    def __enter__(self) -> Recorder:
        orig, calls = self._orig, self.calls

        def upload(staging, app_id, files, private=()):
            t = time.perf_counter()
            got = orig(staging, app_id, files, private)
            calls.append(
                {
                    "files": dict((k, len(v)) for k, v in files.items()),
                    "seconds": time.perf_counter() - t,
                }
            )
            return got

        yarn_staging.Staging.upload = upload  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc) -> None:
        yarn_staging.Staging.upload = self._orig  # type: ignore[method-assign]


def _submit_once() -> dict:
    _, spec = parse_job_args("--workers 1 --memory 512m --backend yarn --no-tensorboard")
    with Recorder() as rec:
        t0 = time.perf_counter()
        job = TonyJob(yarn_backend.submit(spec, make_bundle(CELL, {})))
        t_up = time.perf_counter()
    try:
        job.wait(180)
    finally:
        job.client.release()
        job.client.wait_am_exit(60)
    files = {k: v for c in rec.calls for k, v in c["files"].items()}
    return {
        "files": files,
        "bytes": sum(files.values()),
        "environment_bytes": 0,
        "staging_s": sum(c["seconds"] for c in rec.calls),
        "submit_to_am_serving_s": t_up - t0,
        "_payload": files,
    }


def _raw_webhdfs(cluster, files: dict[str, int]) -> float:
    """The same number and sizes of files with bare WebHDFS calls (CREATE, then the DataNode)."""
    user = getpass.getuser()
    base = f"{cluster.webhdfs_url}/webhdfs/v1/tmp/tony-bench-raw-{os.getpid()}"
    s = requests.Session()
    t = time.perf_counter()
    for name, size in files.items():
        r = s.put(
            f"{base}/{name}",
            params={"op": "CREATE", "overwrite": "true", "user.name": user},
            allow_redirects=False,
            timeout=30,
        )
        s.put(r.headers["Location"], data=b"x" * size, timeout=30).raise_for_status()
    took = time.perf_counter() - t
    s.delete(base, params={"op": "DELETE", "recursive": "true", "user.name": user}, timeout=30)
    return took


def _du(path: Path) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total


def run(quick: bool, cluster, runs: int | None = None) -> dict:
    if cluster is None:
        return {"skipped": "no devcluster running (`python -m tony_jupyter.devcluster up`)"}
    runs = runs or (1 if quick else 3)
    log(f"staging: {runs} round(s) of first + second submission")
    rounds = []
    for _ in range(runs):
        first, second = _submit_once(), _submit_once()
        raw = _raw_webhdfs(cluster, first.pop("_payload"))
        second.pop("_payload")
        rounds.append({"first": first, "second": second, "raw_webhdfs_same_files_s": raw})
        log(f"  staged {first['bytes']} B in {first['staging_s']:.2f} s; raw {raw:.2f} s")
    staged = median([r["first"]["staging_s"] for r in rounds])
    raw = median([r["raw_webhdfs_same_files_s"] for r in rounds])
    return {
        "packs_environment": False,
        "python_on_nodes": sys.executable,
        "environment_a_packer_would_ship_mib": round(_du(Path(sys.prefix)) / 2**20),
        "first": {
            "bytes": rounds[0]["first"]["bytes"],
            "files": len(rounds[0]["first"]["files"]),
            "staging_s": staged,
            "submit_to_am_serving_s": median(
                [r["first"]["submit_to_am_serving_s"] for r in rounds]
            ),
        },
        "second": {
            "bytes": rounds[0]["second"]["bytes"],
            "environment_bytes": 0,
            "staging_s": median([r["second"]["staging_s"] for r in rounds]),
            "submit_to_am_serving_s": median(
                [r["second"]["submit_to_am_serving_s"] for r in rounds]
            ),
        },
        "raw_webhdfs_same_files_s": raw,
        "staging_vs_raw_webhdfs": ratio(staged, raw),
        "all": rounds,
    }
