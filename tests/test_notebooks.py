"""The example notebooks execute headless (nbclient) on the local backend."""

from pathlib import Path

import pytest
from helpers.jobs import run_notebook, wait_no_processes

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tony_home, tmp_path):
    nb = run_notebook(path, tmp_path)
    reports = [
        o["data"]["text/html"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.output_type in ("display_data", "update_display_data")
        and "text/html" in o.get("data", {})
        and "SUCCEEDED" in o["data"]["text/html"]
    ]
    assert reports, "no job report showed SUCCEEDED"
    assert wait_no_processes(tony_home) == []
