"""A NodeManager's localization of a packed venv, alone and with its base interpreter
(``--ship-python``): what shipping the interpreter costs a container's start on a node.

Both sides are the archives a job localizes (packenv.py's ``env``, interpreter.py's ``pyhome``,
packed by the same calls, PRIVATE ARCHIVE resources), each round uploaded under fresh HDFS paths
so that the NodeManager downloads and unpacks them again (it keeps a PRIVATE resource per path
and modification time). One container per side and round, alternating A B A B: an application
whose AM container runs ``true``. The figure is the NodeManager's own: the time between its
container's ``NEW to LOCALIZING`` and ``LOCALIZING to SCHEDULED`` transitions in its log
(download, ``gzip -dc | tar``, permissions), beside the archives' sizes and file counts.

The venv is staging's (bench/staging.py ``build_env``: the runtime packages, numpy, pyarrow);
``--bare-venv``: one with nothing installed (the interpreter's share at its largest).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.lib.common import Context, log, median, ratio, use_devcluster_env
from tony_jupyter.launcher.yarn import interpreter, packenv

NAME = "localization"
ABOUT = "YARN: a NodeManager localizing a packed venv, alone vs with its interpreter"
BASE_SIDE, SHIPPED_SIDE = "venv", "venv+interpreter"
WAIT_S = 300.0
# 2026-11-29 00:31:02,123 INFO ...ContainerImpl: Container container_..._000001 transitioned
# from NEW to LOCALIZING
_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Container (container_\S+) transitioned from "
    r"(\w+) to (\w+)"
)


def add_arguments(p) -> None:
    p.add_argument(
        "--bare-venv",
        action="store_true",
        help="a venv with nothing installed, instead of staging's (runtime packages, numpy, "
        "pyarrow)",
    )


def _archives(root: Path, bare: bool) -> tuple[Path, Path, Path]:
    """The venv, its packed archive and its interpreter's, as a job packs them."""
    if bare:
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    else:
        from bench.staging import build_env

        venv = build_env(root)
    env = root / "env.tar.gz"
    packenv.pack(venv, env)
    prefix = interpreter.base_prefix(venv)
    why = interpreter.not_relocatable(prefix) if prefix else "no base interpreter"
    if prefix is None or why:
        raise RuntimeError(f"this machine's Python cannot be shipped: {why}")
    tar, py = root / "py.tar", root / "py.tar.gz"
    interpreter.pack(prefix, tar)
    packenv.gzip_in_parallel(tar, py)
    tar.unlink()
    return venv, env, py


def _members(archive: Path) -> int:
    with tarfile.open(archive) as t:
        return sum(1 for _ in t)


def _upload(yarn, local: Path, path: str) -> dict:
    staging = yarn.staging
    staging.client.upload(path, str(local), overwrite=True, permission="600")
    st = staging.client.status(path)
    return {
        "resource": f"{staging.fs}{path}",
        "type": "ARCHIVE",
        "visibility": "PRIVATE",
        "size": st["length"],
        "timestamp": st["modificationTime"],
    }


def _localize(yarn, resources: dict) -> str:
    """One application whose AM container localizes ``resources`` and runs ``true``; its
    container's id once it has ended."""
    from tony_jupyter.launcher.yarn.rm import TERMINAL_APP_STATES
    from tony_jupyter.launcher.yarn.staging import local_resource_json

    rm = yarn.rm
    app_id = rm.new_application()
    rm.submit(
        {
            "application-id": app_id,
            "application-name": "tony-bench localization",
            "application-type": "TONY-BENCH",
            "queue": "default",
            "resource": {"memory": 128, "vCores": 1},
            "max-app-attempts": 1,
            "am-container-spec": {
                "local-resources": local_resource_json(resources),
                "environment": {"entry": [{"key": "HADOOP_USER_NAME", "value": yarn.conf.user}]},
                "commands": {"command": "true"},
            },
        }
    )
    deadline = time.monotonic() + WAIT_S
    while True:
        app = rm.app(app_id) or {}
        if app.get("state") in TERMINAL_APP_STATES:
            break
        if time.monotonic() > deadline:
            rm.kill(app_id)
            raise RuntimeError(f"{app_id} did not end within {WAIT_S:g} s")
        time.sleep(0.2)
    return "container_" + app_id.removeprefix("application_") + "_01_000001"


def _localizing_s(cluster, container: str) -> float:
    """Seconds from the container's LOCALIZING to its SCHEDULED (or its end), read from the
    NodeManager logs of the devcluster."""
    start = end = None
    for log_file in sorted(cluster.layout.logs.glob("nm*.log")):
        for line in log_file.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if not m or m.group(2) != container:
                continue
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if m.group(4) == "LOCALIZING":
                start = at
            elif m.group(3) == "LOCALIZING":
                end = at
    if start is None or end is None:
        raise RuntimeError(f"no LOCALIZING transitions of {container} in the NodeManagers' logs")
    return end - start


def run(ctx: Context) -> dict:
    cluster = ctx.cluster
    if cluster is None or ctx.quick:
        return {"skipped": "no devcluster running (`python -m tony_jupyter_devcluster up`)"}
    from tony_jupyter.launcher.yarn import secure

    use_devcluster_env(cluster)
    runs = ctx.runs or 5
    yarn = secure.connect()
    base = f"/tmp/tony-bench-localization-{int(time.time())}"
    with tempfile.TemporaryDirectory(prefix="tony-bench-loc-") as tmp:
        log("localization: building and packing the venv and its interpreter")
        bare = bool(getattr(ctx.args, "bare_venv", False))
        venv, env, py = _archives(Path(tmp), bare)
        sizes = {
            "venv_archive_mib": round(env.stat().st_size / 2**20, 1),
            "venv_files": _members(env),
            "interpreter_archive_mib": round(py.stat().st_size / 2**20, 1),
            "interpreter_files": _members(py),
        }
        log(f"  {sizes}")
        rounds: list[dict] = []
        try:
            # round 0, not counted: each NodeManager's first localization (its localizer's
            # start, the user's cache directories made) falls on whichever side comes first
            for n in range(runs + 1):
                got = {}
                for side in (BASE_SIDE, SHIPPED_SIDE):
                    d = f"{base}/{n}-{side.replace('+', '-')}"
                    resources = {packenv.ENV_NAME: _upload(yarn, env, f"{d}/env.tar.gz")}
                    if side == SHIPPED_SIDE:
                        resources[interpreter.NAME] = _upload(yarn, py, f"{d}/py.tar.gz")
                    container = _localize(yarn, resources)
                    time.sleep(1.0)  # the NodeManager's log written out
                    got[side] = round(_localizing_s(cluster, container), 3)
                rounds.append(got)
                log(f"  round {n}{' (warm-up)' if n == 0 else ''}: {got}")
        finally:
            yarn.staging.client.delete(base, recursive=True)
    warmup, rounds = rounds[0], rounds[1:]
    a = median([r[BASE_SIDE] for r in rounds])
    b = median([r[SHIPPED_SIDE] for r in rounds])
    return {
        "venv": "bare" if bare else "staging's (runtime packages, numpy, pyarrow)",
        "archives": sizes,
        "localizing_s": {BASE_SIDE: a, SHIPPED_SIDE: b},
        "with_interpreter_vs_venv_alone": ratio(b, a),
        "all": rounds,
        "warmup": warmup,
    }
