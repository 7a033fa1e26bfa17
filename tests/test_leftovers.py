"""The shared "nothing left behind" check (tests/helpers/leftovers.py) fails, naming what is
left, while a check finds something, and passes once nothing is."""

import subprocess
import sys

import pytest
from helpers.leftovers import live_apps, processes_under, staged, wait_nothing_left


def test_a_process_left_under_the_root_is_named_until_it_is_gone(tmp_path):
    (tmp_path / "job").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path / "job"
    )
    try:
        with pytest.raises(AssertionError, match=rf"left behind: processes .*pid={proc.pid}"):
            wait_nothing_left(0.3, 0.1, processes=lambda: processes_under(tmp_path))
    finally:
        proc.kill()
        proc.wait()
    wait_nothing_left(5, 0.1, processes=lambda: processes_under(tmp_path))


def test_live_apps_and_their_staging_are_named():
    apps = [
        {"id": "application_1_0001", "state": "RUNNING"},
        {"id": "application_1_0002", "state": "FINISHED"},
        {"id": "application_1_0003", "state": "ACCEPTED"},
    ]
    ours = {"application_1_0001", "application_1_0002"}
    assert live_apps(apps, ours) == ["application_1_0001"]
    assert live_apps(apps) == ["application_1_0001", "application_1_0003"]
    assert staged(["application_1_0002", "cache", "application_9_0001"], ours) == [
        "application_1_0002"
    ]
    with pytest.raises(AssertionError, match=r"left behind: apps \['application_1_0001'\]$"):
        wait_nothing_left(0, apps=lambda: live_apps(apps, ours), staging=lambda: [])
