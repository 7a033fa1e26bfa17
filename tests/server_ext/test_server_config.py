"""The server extension's settings are traitlets (``c.TonyJupyter.*``), and each takes effect."""

import json
import os
import time

import pytest
from helpers.server import finished_job, status

from tony_jupyter.core import retention
from tony_jupyter.server_ext.config import TonyJupyter

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def other_home(tmp_path):
    return tmp_path / "elsewhere"


@pytest.fixture
def jp_server_config(other_home, tony_home, monkeypatch):
    # tony_home first: its monkeypatch then restores TONY_JUPYTER_HOME, which the server
    # extension sets from jobs_home for its kernels; the same for the history's retention
    monkeypatch.setenv(retention.DAYS_ENV, "30")
    return {
        "ServerApp": {"jpserver_extensions": {"tony_jupyter": True}},
        "TonyJupyter": {
            "jobs_home": str(other_home),
            "proxy_enabled": False,
            "max_events_wait_seconds": 0.5,
            "threads": 2,
            "history_days": 7,
        },
    }


async def test_settings_from_the_server_config_take_effect(
    jp_fetch, jp_serverapp, tony_home, other_home, monkeypatch
):
    config = jp_serverapp.web_app.settings["tony_jupyter"]
    assert config.jobs_home == str(other_home) and config.threads == 2
    assert jp_serverapp.web_app.settings["tony_jupyter.jobs"].pool._max_workers == 2
    # jobs_home: the jobs listed are those under it, not under the test's TONY_JUPYTER_HOME
    finished_job(tony_home, "tony_20240101_000000_here00")
    job = finished_job(other_home, "tony_20240101_000000_there0")
    # history_days: a job that ended 8 days ago is past the retention: gone from the list
    old = finished_job(other_home, "tony_20240101_000000_old000")
    status_json = other_home / "jobs" / old / "status.json"
    got = json.loads(status_json.read_text())
    status_json.write_text(json.dumps({**got, "finished": time.time() - 8 * 86400}))
    got = json.loads((await jp_fetch("tony", "api", "jobs")).body)
    assert [j["job_id"] for j in got["jobs"]] == [job]
    # proxy_enabled=False: no /tony/proxy route at all
    assert await status(jp_fetch, "tony", "proxy", job, "tensorboard", "x") == 404
    # max_events_wait_seconds bounds a long-poll however long the client asks
    got = json.loads(
        (await jp_fetch("tony", "api", "jobs", job, "events", params={"timeout": 600})).body
    )
    assert got == {"events": [], "next": 0}
    assert os.environ["TONY_JUPYTER_HOME"] == str(other_home)  # for its kernels
    assert os.environ[retention.DAYS_ENV] == "7" and not (other_home / "jobs" / old).exists()


def test_every_setting_says_what_it_does():
    traits = TonyJupyter.class_own_traits(config=True)
    assert set(traits) == {
        "jobs_home",
        "proxy_enabled",
        "endpoint_cache_seconds",
        "max_events_wait_seconds",
        "threads",
        "history_days",
        "tensorboard_idle_seconds",
    }
    assert all(len(t.help) > 40 for t in traits.values())
