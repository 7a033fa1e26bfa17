"""The example notebooks execute headless (nbclient) on the local backend."""

from pathlib import Path

import nbformat
import pytest
from conftest import wait_no_processes
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tony_home, tmp_path):
    nb = nbformat.read(path, as_version=4)
    # "python3" is the kernel of the interpreter running the tests (the project's venv).
    NotebookClient(
        nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
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
