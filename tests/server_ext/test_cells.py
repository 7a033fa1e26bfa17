"""``GET /tony/api/cells?ids=...``: the newest job of each notebook cell, the server's user's
only, and a clear 400 for a malformed list."""

import json

import pytest
from helpers.jobs import fetch_json
from helpers.server import finished_job, status

from tony_jupyter.core.origin import JobOrigin

pytest_plugins = ["pytest_jupyter.jupyter_server"]


def _from_cell(home, job_id, cell, when, state="SUCCEEDED"):
    finished_job(home, job_id, state)
    d = home / "jobs" / job_id
    (d / "origin.json").write_text(json.dumps(JobOrigin(cell, "nb.ipynb", when).to_json()))


async def test_each_cell_gets_its_newest_job(jp_fetch, tony_home):
    _from_cell(tony_home, "tony_20240101_000000_aaaaaa", "c1", 1.0, "FAILED")
    _from_cell(tony_home, "tony_20240101_000001_bbbbbb", "c1", 2.0)
    _from_cell(tony_home, "tony_20240101_000002_cccccc", "c2", 3.0, "KILLED")
    _from_cell(tony_home, "tony_20240101_000003_dddddd", "other", 4.0)
    finished_job(tony_home, "tony_20240101_000004_eeeeee")  # no origin recorded
    got = await fetch_json(jp_fetch, "tony", "api", "cells", params={"ids": "c2,c1,gone"})
    rows = [(c["cell_id"], c["job_id"], c["state"], c["terminal"]) for c in got["cells"]]
    assert rows == [
        ("c2", "tony_20240101_000002_cccccc", "KILLED", True),
        ("c1", "tony_20240101_000001_bbbbbb", "SUCCEEDED", True),
    ]
    assert got["cells"][0]["notebook"] == "nb.ipynb"


async def test_another_users_job_is_not_shown(jp_fetch, tony_home, jp_serverapp):
    _from_cell(tony_home, "tony_20240101_000000_aaaaaa", "c1", 1.0)
    _from_cell(tony_home, "tony_20240101_000001_bbbbbb", "c2", 1.0)
    yarn = {"app_id": "application_1_0001", "rm_url": "http://rm", "user": "bob", "secure": True}
    (tony_home / "jobs" / "tony_20240101_000000_aaaaaa" / "yarn.json").write_text(json.dumps(yarn))
    jp_serverapp.web_app.settings["tony_jupyter.jobs"].user = "alice"
    got = await fetch_json(jp_fetch, "tony", "api", "cells", params={"ids": "c1,c2"})
    assert [c["cell_id"] for c in got["cells"]] == ["c2"]


@pytest.mark.parametrize("ids", ["", ",", "a b", "../x", "x" * 300, ",".join(["a"] * 2001)])
async def test_a_malformed_list_is_400(jp_fetch, tony_home, ids):
    assert await status(jp_fetch, "tony", "api", "cells", params={"ids": ids}) == 400


async def test_cells_without_a_token_are_refused(jp_fetch, tony_home):
    got = await status(
        jp_fetch, "tony", "api", "cells", params={"ids": "c"}, headers={"Authorization": ""}
    )
    assert got == 403
