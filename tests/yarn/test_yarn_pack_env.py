"""``--pack-env``: the job's venv packed, uploaded to the HDFS cache once per content hash and
localized as the ARCHIVE ``env``, in which the AM and the executors run."""

import json
import os
import time
import uuid

import pytest
from IPython.core.error import UsageError

from bench.staging import build_env
from tony_jupyter.launcher.client import jobs_dir, list_jobs
from tony_jupyter_devcluster import nodefs
from tony_jupyter_devcluster.config import NODEMANAGERS

pytestmark = [pytest.mark.yarn, pytest.mark.slow]
RUN = uuid.uuid4().hex[:6]
# What the AM and an executor import (pyproject's runtime dependencies they need); the
# notebook-side ones (IPython, widgets, Jupyter) stay out so the venv is small.
RUNTIME = ["requests", "cloudpickle", "tornado", "psutil", "jpype1", "hdfs"]


@pytest.fixture(scope="module")
def small_venv(tmp_path_factory):
    """A self-contained venv of the runtime deps and a copy of tony_jupyter."""
    root = tmp_path_factory.mktemp("packenv")
    venv = build_env(root, RUNTIME)
    # The user's own package, installed editable (a path .pth, as hatchling writes one)
    pkg = root / "userproj" / "src" / "userpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHERE = 'the user project'\n")
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "_userpkg.pth").write_text(str(pkg.parent))
    return venv


CELL = """
import os, sys
import tony_jupyter
# The container's directory (the task itself runs in its shipped copy of the notebook's).
prefix, cwd = sys.prefix, os.environ["TONY_BUNDLE_DIR"]
base = sys.base_prefix
import userpkg
upkg = (userpkg.WHERE, userpkg.__file__)
pkg = tony_jupyter.__file__
"""


def _run(shell, venv, name):
    t0 = time.monotonic()
    job = shell.run_cell_magic(
        "tony",
        f"--workers 1 --async --pack-env {venv} --pull prefix,cwd,pkg,base,upkg --name {name}",
        CELL,
    )
    submitted = time.monotonic() - t0
    assert job.result(timeout=180) is None
    info = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())["pack_env"]
    return job, info, submitted, time.monotonic() - t0


def test_pack_env_uploads_once_and_tasks_run_in_it(
    shell, tony_home, cluster, yarn_cluster, small_venv
):
    first_job, first, sub1, total1 = _run(shell, small_venv, f"packenv1-{RUN}")
    prefix, cwd, pkg, base = (shell.user_ns[k] for k in ("prefix", "cwd", "pkg", "base"))
    # The venv is made from this machine's pyenv Python, which goes with it (interpreter.py):
    # the executor's Python is a venv assembled in the container over the localized venv
    # (tony_jupyter is the archive's, in the NodeManager's filecache) and interpreter.
    env = os.path.join(cwd, "env")
    assert os.path.realpath(prefix) == os.path.join(os.path.realpath(cwd), ".tony-venv")
    assert os.path.realpath(pkg).startswith(os.path.realpath(env) + "/"), pkg
    assert "filecache" in os.path.realpath(env)
    assert os.path.realpath(base) == os.path.realpath(os.path.join(cwd, "pyhome")), base
    assert "filecache" in os.path.realpath(base)
    assert first["interpreter"]["size"] > 1 << 20
    # the editable package imports from the archive's copy, not from its project directory
    where, upkg = shell.user_ns["upkg"]
    assert where == "the user project"
    assert os.path.realpath(upkg).startswith(os.path.realpath(env) + "/"), upkg
    # Unpacked with the permissions Hadoop gives a PRIVATE resource (0500 files, 0700 dirs),
    # set by the NodeManagers' own local filesystem (devcluster/nodefs.py), one system call a
    # file instead of one chmod process.
    assert os.stat(os.path.join(env, "pyvenv.cfg")).st_mode & 0o777 == 0o500
    assert os.stat(os.path.join(env, "lib")).st_mode & 0o777 == 0o700
    for nm in NODEMANAGERS:
        assert nodefs.CLASS in (yarn_cluster.layout.nm_conf(nm) / "core-site.xml").read_text()
    assert cluster.wait_app_end(first_job.job_id)["finalStatus"] == "SUCCEEDED"

    second_job, second, sub2, total2 = _run(shell, small_venv, f"packenv2-{RUN}")
    assert cluster.wait_app_end(second_job.job_id)["finalStatus"] == "SUCCEEDED"
    assert second["hash"] == first["hash"] and second["path"] == first["path"]
    # A venv made for this run has fresh mtimes, so its hash is new: the first run uploads.
    assert first["bytes_uploaded"] > 100_000
    assert second["bytes_uploaded"] == 0
    print(
        f"\npack-env: 1st {first['bytes_uploaded']} B uploaded, env {first['seconds']} s, "
        f"submit {sub1:.1f} s, total {total1:.1f} s; 2nd {second['bytes_uploaded']} B, "
        f"env {second['seconds']} s, submit {sub2:.1f} s, total {total2:.1f} s"
    )


def test_pack_env_that_is_not_a_venv_is_refused_before_submitting(
    shell, tony_home, cluster, tmp_path
):
    before = len(cluster.apps())
    with pytest.raises(UsageError, match="not a venv, no pyvenv.cfg .*conda environments are not"):
        shell.run_cell_magic("tony", f"--pack-env {tmp_path} --name badenv-{RUN}", "1")
    with pytest.raises(UsageError, match="--pack-env /not/a/venv: no such directory"):
        shell.run_cell_magic("tony", f"--pack-env /not/a/venv --name badenv-{RUN}", "1")
    assert len(cluster.apps()) == before
    assert list_jobs() == []


def test_ship_python_always_where_it_cannot_ship_is_refused_before_anything_is_packed(
    shell, tony_home, cluster, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    system = tmp_path / "sysvenv"  # a venv made from the system's /usr/bin/python3
    system.mkdir()
    (system / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    before = len(cluster.apps())
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic(
            "tony", f"--pack-env {system} --ship-python always --name ship-{RUN}", "1"
        )
    msg = str(e.value)
    assert "--ship-python always: the venv's Python cannot run from another path" in msg
    assert "/usr is a system prefix" in msg and "nothing was submitted" in msg
    with pytest.raises(UsageError, match="this job packs none: add --pack-env"):
        shell.run_cell_magic(
            "tony", f"--python /usr/bin/python3 --ship-python always --name ship-{RUN}", "1"
        )
    assert len(cluster.apps()) == before
    assert list_jobs() == []
    assert not (tmp_path / "cache").exists()  # nothing packed
