"""Part 4: what a YARN submission stages on HDFS, bytes and seconds, for the first and second
submission of the same cell with a real environment (``--pack-env``), and the environment's
upload throughput beside a raw WebHDFS upload of the same archive.

The environment is a venv built here once per run: the runtime packages the AM and executors
import (requests, cloudpickle, tornado, psutil, jpype1, hdfs), numpy and pyarrow (from pip's
cache), and a copy of tony_jupyter (venv-pack refuses editable installs). Each round first
removes that environment's archive from the HDFS cache, so the first submission packs and
uploads it and the second finds it by content hash and uploads no environment bytes. The raw
side is two bare WebHDFS calls (CREATE, then a streamed PUT to the DataNode) with the same
archive, packed once by the bench with the same venv-pack call. ``interpreter``: the venv's
base interpreter as it goes with the job where it is a prefix of one CPython (pyenv's here):
hash and pack seconds, bytes, and a first unpacking with it beside one without.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

import tony_jupyter
from bench.lib.common import Context, log, median, ratio
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher.yarn import backend as yarn_backend
from tony_jupyter.launcher.yarn import interpreter, packenv
from tony_jupyter.launcher.yarn import staging as yarn_staging
from tony_jupyter.options import parse_job_args

NAME = "staging"
ABOUT = "YARN --pack-env: bytes, seconds staged (1st, 2nd submission) vs raw WebHDFS"
CELL = "import numpy, pyarrow, sys\nsys.prefix\n"
ENV_PACKAGES = [
    "requests",
    "cloudpickle",
    "tornado",
    "psutil",
    "jpype1",
    "hdfs",
    "numpy",
    "pyarrow",
]


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


def build_env(root: Path, packages: list[str] = ENV_PACKAGES) -> Path:
    """A self-contained venv at ``root/venv``: ``packages`` (from pip's cache) and a copy of
    tony_jupyter (not an editable install: venv-pack refuses those, their code lives outside
    the venv). Also the pack-env tests' venv."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages],
        check=True,
    )
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    src = Path(tony_jupyter.__file__).parent
    shutil.copytree(src, Path(site) / "tony_jupyter", ignore=shutil.ignore_patterns("__pycache__"))
    return venv


def _submit_once(venv: Path) -> dict:
    flags = f"--workers 1 --memory 512m --backend yarn --no-tensorboard --pack-env {venv}"
    _, spec = parse_job_args(flags)
    with Recorder() as rec:
        t0 = time.perf_counter()
        record = yarn_backend.submit(spec, make_bundle(CELL, {}))
        t_up = time.perf_counter()
    job = TonyJob(record)
    try:
        job.wait(300)
    finally:
        job.client.release()
        job.client.wait_am_exit(60)
    env = (record.read_json("yarn.json") or {})["pack_env"]
    files = {k: v for c in rec.calls for k, v in c["files"].items()}
    return {
        "files": files,
        "bytes": sum(files.values()) + env["bytes_uploaded"],
        "bundle_bytes": sum(files.values()),
        "environment_bytes": env["bytes_uploaded"],
        "environment": env,
        "bundle_staging_s": sum(c["seconds"] for c in rec.calls),
        "staging_s": sum(c["seconds"] for c in rec.calls) + env["seconds"],
        "submit_to_am_serving_s": t_up - t0,
        "_payload": files,
    }


def _drop_cached_env(cluster, path: str) -> None:
    requests.delete(
        f"{cluster.webhdfs_url}/webhdfs/v1{path}",
        params={"op": "DELETE", "user.name": getpass.getuser()},
        timeout=30,
    )


def _raw_upload(cluster, archive: Path) -> float:
    """The archive with two bare WebHDFS calls: CREATE, then a streamed PUT to the DataNode."""
    user = getpass.getuser()
    url = f"{cluster.webhdfs_url}/webhdfs/v1/tmp/tony-bench-raw-{os.getpid()}.tar.gz"
    t = time.perf_counter()
    r = requests.put(
        url,
        params={"op": "CREATE", "overwrite": "true", "user.name": user},
        allow_redirects=False,
        timeout=30,
    )
    with open(archive, "rb") as f:
        requests.put(r.headers["Location"], data=f, timeout=300).raise_for_status()
    took = time.perf_counter() - t
    requests.delete(url, params={"op": "DELETE", "user.name": user}, timeout=30)
    return took


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


def _unpack_s(archives: list[Path], into: Path) -> float:
    """Seconds for ``tar -xzf`` of each archive into its own directory, as a node's first
    unpacking of them (the NodeManager runs ``gzip -dc | tar``)."""
    t = time.perf_counter()
    for n, a in enumerate(archives):
        d = into / str(n)
        d.mkdir(parents=True)
        subprocess.run(["tar", "-xzf", str(a), "-C", str(d)], check=True)
    return time.perf_counter() - t


def interpreter_figures(venv: Path, archive: Path, tmp: Path) -> dict:
    """The venv's base interpreter shipped with it (launcher/yarn/interpreter.py): hash and
    pack seconds, bytes, and a first unpacking with and without it, side by side."""
    prefix = interpreter.base_prefix(venv)
    why = interpreter.not_relocatable(prefix) if prefix else "no base interpreter found"
    if prefix is None or why:
        return {"shipped": False, "why": why}
    t = time.perf_counter()
    interpreter.content_hash(prefix)
    hash_s = time.perf_counter() - t
    tar, gz = tmp / "py.tar", tmp / "py.tar.gz"
    t = time.perf_counter()
    unpacked = interpreter.pack(prefix, tar)
    packenv.gzip_in_parallel(tar, gz)
    pack_s = time.perf_counter() - t
    tar.unlink()
    without = _unpack_s([archive], tmp / "without")
    with_it = _unpack_s([archive, gz], tmp / "with")
    return {
        "shipped": True,
        "prefix": str(prefix),
        "hash_s": round(hash_s, 3),
        "pack_s": round(pack_s, 2),
        "unpacked_mib": round(unpacked / 2**20, 1),
        "archive_mib": round(gz.stat().st_size / 2**20, 1),
        "first_unpack_without_s": round(without, 2),
        "first_unpack_with_s": round(with_it, 2),
        "first_unpack_with_vs_without": ratio(with_it, without),
    }


def _du(path: Path) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total


def run(ctx: Context) -> dict:
    quick, cluster, runs = ctx.quick, ctx.cluster, ctx.runs
    if cluster is None:
        return {"skipped": "no devcluster running (`python -m tony_jupyter_devcluster up`)"}
    runs = runs or (1 if quick else 3)
    with tempfile.TemporaryDirectory(prefix="tony-bench-env-") as tmp:
        log("staging: building the environment venv")
        venv = build_env(Path(tmp))
        archive = Path(tmp) / "env.tar.gz"
        t = time.perf_counter()
        packenv.pack(venv, archive)
        log(f"  packed {archive.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t:.1f} s")
        shipped = interpreter_figures(venv, archive, Path(tmp))
        log(f"  its interpreter: {shipped}")
        log(f"staging: {runs} round(s) of first + second submission with --pack-env")
        rounds = []
        for _ in range(runs):
            first = _submit_once(venv)
            second = _submit_once(venv)
            raw = _raw_upload(cluster, archive)
            _drop_cached_env(cluster, first["environment"]["path"])
            raw_files = _raw_webhdfs(cluster, first.pop("_payload"))
            second.pop("_payload")
            env = first["environment"]
            rounds.append(
                {
                    "first": first,
                    "second": second,
                    "raw_webhdfs_archive_s": raw,
                    "raw_webhdfs_same_files_s": raw_files,
                    "upload_mib_s": env["bytes_uploaded"] / 2**20 / env["upload_s"],
                    "raw_mib_s": archive.stat().st_size / 2**20 / raw,
                }
            )
            log(
                f"  first: env {env['bytes_uploaded']} B, pack {env['pack_s']:.1f} s, upload "
                f"{env['upload_s']:.1f} s (raw {raw:.1f} s); second: env "
                f"{second['environment_bytes']} B, {second['staging_s']:.2f} s"
            )
        env_mib = archive.stat().st_size / 2**20
        venv_mib = _du(venv) / 2**20

    def med(side: str, key: str) -> float:
        return median([r[side][key] for r in rounds])

    up, raw_up = (
        median([r["upload_mib_s"] for r in rounds]),
        median([r["raw_mib_s"] for r in rounds]),
    )
    return {
        "packs_environment": True,
        "environment": {
            "packages": ENV_PACKAGES + ["tony_jupyter (copied)"],
            "venv_mib": round(venv_mib, 1),
            "archive_mib": round(env_mib, 1),
        },
        "first": {
            "bytes": rounds[0]["first"]["bytes"],
            "environment_bytes": rounds[0]["first"]["environment_bytes"],
            "files": len(rounds[0]["first"]["files"]),
            "staging_s": med("first", "staging_s"),
            "pack_s": median([r["first"]["environment"]["pack_s"] for r in rounds]),
            "env_upload_s": median([r["first"]["environment"]["upload_s"] for r in rounds]),
            "submit_to_am_serving_s": med("first", "submit_to_am_serving_s"),
        },
        "second": {
            "bytes": rounds[0]["second"]["bytes"],
            "environment_bytes": max(r["second"]["environment_bytes"] for r in rounds),
            "staging_s": med("second", "staging_s"),
            "submit_to_am_serving_s": med("second", "submit_to_am_serving_s"),
        },
        "interpreter": shipped,
        "env_upload_mib_s": up,
        "raw_webhdfs_mib_s": raw_up,
        "env_upload_vs_raw_webhdfs": ratio(up, raw_up),
        "raw_webhdfs_same_files_s": median([r["raw_webhdfs_same_files_s"] for r in rounds]),
        "bundle_staging_vs_raw_webhdfs": ratio(
            med("second", "bundle_staging_s"),
            median([r["raw_webhdfs_same_files_s"] for r in rounds]),
        ),
        "all": rounds,
    }
