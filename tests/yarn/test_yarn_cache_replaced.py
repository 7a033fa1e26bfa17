"""A task overwrites its job's cached --pack-env archive on HDFS (it holds the user's HDFS
credentials); the next job notices that the archive is not what this host uploaded, uploads the
real one again, says so, and runs in the real environment (issue 42, finding 5;
launcher/yarn/uploads.py). On the devcluster."""

import json
import uuid

import pytest

from bench.staging import build_env
from tony_jupyter.launcher.client import jobs_dir

pytestmark = pytest.mark.yarn  # and the full tier's (tests/tiers.py)
RUN = uuid.uuid4().hex[:6]
RUNTIME = ["requests", "cloudpickle", "tornado", "psutil", "jpype1", "hdfs"]

# What a task can do with its user's HDFS credentials: a "venv" whose python prints and fails.
OVERWRITE = """
import io, tarfile
from hdfs import InsecureClient
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for name, text, mode in [("pyvenv.cfg", "home = /usr/bin\\n", 0o644),
                             ("bin/python", "#!/bin/sh\\necho PWNED; exit 3\\n", 0o755)]:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(text), mode
        tar.addfile(info, io.BytesIO(text.encode()))
InsecureClient({webhdfs!r}, user={user!r}).write({path!r}, buf.getvalue(), overwrite=True)
"""
# (realpath: where the venv's interpreter goes with it, sys.prefix is a venv assembled in the
# container over the localized env, whose lib/ is the env's)
CELL = (
    "import os, sys, tony_jupyter\n"
    "prefix, pkg = sys.prefix, os.path.realpath(tony_jupyter.__file__)\n"
)


def run(shell, venv, name: str, cell: str = CELL) -> tuple[dict, str]:
    job = shell.run_cell_magic(
        "tony", f"--workers 1 --async --pack-env {venv} --pull prefix,pkg --name {name}", cell
    )
    assert job.result(timeout=240) is None
    info = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())["pack_env"]
    return info, job.job_id


def test_a_cached_env_a_task_replaced_is_uploaded_again_and_the_job_runs_in_the_real_one(
    shell, tony_home, cluster, tmp_path, capfd
):
    venv = build_env(tmp_path, RUNTIME)
    first, first_id = run(shell, venv, f"cache1-{RUN}")
    assert first["bytes_uploaded"] > 100_000 and "replaced" not in first
    assert cluster.wait_app_end(first_id)["finalStatus"] == "SUCCEEDED"

    task = OVERWRITE.format(webhdfs=cluster.webhdfs, user=cluster.user, path=first["path"])
    second, second_id = run(shell, venv, f"cache2-{RUN}", task + CELL)
    assert second["bytes_uploaded"] == 0  # the cache was ours when it was submitted
    assert cluster.wait_app_end(second_id)["finalStatus"] == "SUCCEEDED"
    capfd.readouterr()

    third, third_id = run(shell, venv, f"cache3-{RUN}")
    err = capfd.readouterr().err
    assert f"the cached {first['path']} was replaced" in err and "uploading it again" in err
    assert "was replaced" in third["replaced"] and third["bytes_uploaded"] > 100_000
    assert cluster.wait_app_end(third_id)["finalStatus"] == "SUCCEEDED"
    # It ran in the real environment: its tony_jupyter is the one in the localized env.
    assert "/env" in shell.user_ns["pkg"] or "filecache" in shell.user_ns["pkg"]
    fourth, _ = run(shell, venv, f"cache4-{RUN}")
    assert fourth["bytes_uploaded"] == 0 and "replaced" not in fourth  # ours again
