"""The shipped directory in a job handed to the warm YARN AM (warmkeeper.py): it travels
in the hand-over as our own archive (srcdir.archive: regular files only) and each spare
executor unpacks it with safefiles.extract_tar, on the devcluster, where a fresh container would
have NodeManager localize it."""

import base64
import json
import time

import pytest
import requests

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.yarn import warmkeeper as warm

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

RUN = "--workers 1 --no-tensorboard"
READ = """
import os, stat, pkg.mod
seen = (pkg.mod.X, open("data/rows.txt").read(), open("inner").read(),
        bool(os.stat("run.sh").st_mode & stat.S_IXUSR), os.path.exists("id_rsa"))
"""


@pytest.fixture
def warm_on(monkeypatch, tony_home):
    monkeypatch.setenv(warm.warm.YARN_IDLE, "300")
    yield
    warm.discard()  # as the kernel's exit does; the fixtures then check nothing is left


def test_a_job_handed_to_the_warm_am_gets_the_shipped_directory(shell, tony_home, warm_on):
    notebook = tony_home.parent / "notebook"
    shell.run_cell_magic("tony", RUN, "1")
    deadline = time.monotonic() + 180
    while not (warm.current() and warm.ready(warm.current()) >= 1):
        assert time.monotonic() < deadline, "no warm AM with a waiting spare executor came up"
        time.sleep(0.5)
    spare = warm.current()
    # A hand-over naming a file outside the AM's job directory is refused before it is taken
    # (400), and the warm AM still waits for its job.
    url = warm.wait_for_url(spare.cluster.rm, spare.app_id)
    for name in ("../escape.txt", "/tmp/escape.txt", "a/../../escape.txt"):
        r = requests.post(
            f"{url}/api/v1/spare/job",
            json={"files": {name: base64.b64encode(b"x").decode()}},
            headers={"Authorization": f"Bearer {spare.token}"},
            timeout=30,
        )
        assert r.status_code == 400 and "refused the file name" in r.text, r.text
    (notebook / "pkg").mkdir()
    (notebook / "pkg" / "__init__.py").write_text("")
    (notebook / "pkg" / "mod.py").write_text("X = 7\n")
    (notebook / "data").mkdir()
    (notebook / "data" / "rows.txt").write_text("1,2")
    (notebook / "inner").symlink_to(notebook / "data" / "rows.txt")  # absolute, inside
    (notebook / "run.sh").write_text("#!/bin/sh\n")
    (notebook / "run.sh").chmod(0o755)
    (tony_home.parent / "id_rsa").write_text("PRIVATE KEY")
    (notebook / "id_rsa").symlink_to(tony_home.parent / "id_rsa")  # out: left out
    shell.run_cell_magic("tony", f"{RUN} --pull seen", READ)
    assert shell.user_ns["seen"] == (7, "1,2", "1,2", True, False)
    rec = next(r for r in list_jobs() if r.id == spare.app_id)
    assert json.loads((rec.dir / "yarn.json").read_text())["warm"] is True  # the same warm AM
