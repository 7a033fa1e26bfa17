"""A real kernel shows the widget, and the saved notebook's nbconvert HTML holds the report."""

from __future__ import annotations

import json
import sys

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

CELL = """
from tony_jupyter.core.protocol import JobSnapshot
from tony_jupyter.widgets import JobView

def snap(state, **kw):
    t = {"id": "worker:0", "type": "worker", "index": 0, "tracked": True, "state": state,
         "host": "127.0.0.1", "port": 41000, "exit_code": None, "last_heartbeat": 9.0,
         "progress": {}}
    return {"job_id": "job-nb", "name": "nbtest", "state": state, "attempt": 1,
            "max_attempts": 1, "attempts": [], "started": 0.0, "now": 10.0, "chief": "worker:0",
            "tasks": [dict(t, **kw)], "reason": "", "endpoints": {}}

view = JobView("job-nb", on_kill=lambda: None)
view.display()
view.update(JobSnapshot.from_json(snap("RUNNING", progress={"epochs": 2, "epoch": 1, "loss": 0.5})))
view.append_log("worker:0", "hello from the chief\\n")
view.finish(JobSnapshot.from_json(dict(snap("SUCCEEDED", exit_code=0), finished=12.5,
                                       reason="all tracked tasks succeeded")))
print(view.mode)
"""


def _kernelspec(root) -> str:
    # this venv's interpreter, whatever kernels are installed globally
    spec = root / "kernels" / "tony-widgets-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "tony-widgets-test",
                "language": "python",
            }
        )
    )
    return "tony-widgets-test"


def test_saved_notebook_html_shows_the_final_report(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    kernel = _kernelspec(tmp_path / "jupyter")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    NotebookClient(
        nb, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, path)

    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert [o.get("text") for o in outputs if o.output_type == "stream"] == ["widget\n"]
    shown = [o for o in outputs if o.output_type == "display_data"]
    # the live widget's output was replaced in place by the report
    assert len(shown) == 1
    assert "application/vnd.jupyter.widget-view+json" not in shown[0].data
    assert "tony-job-report" in shown[0].data["text/html"]

    body, _ = HTMLExporter().from_filename(str(path))
    assert "tony-job-report" in body
    assert "SUCCEEDED" in body and "12.5 s" in body and "all tracked tasks succeeded" in body
    assert "hello from the chief" in body and "127.0.0.1:41000" in body
