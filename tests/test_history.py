"""A local job's history: the AM leaves history.json (spec, the cell's hash, attempts, final
state) and metrics.json (each task's reports and resource use over time) in the job's
directory, which `%tony list` / status / logs read after the AM is gone."""

import hashlib
import json

from helpers.jobs import FAST

from tony_jupyter import commands
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

CELL = """
import time, tony_jupyter
for step in range(1, 16):
    tony_jupyter.report(step=step, loss=1.0 / step, total_steps=15)
    time.sleep(0.1)
print("trained", flush=True)
"""


def test_a_local_jobs_history_has_its_cell_metrics_and_resource_use(shell, tony_home):
    shell.run_cell_magic("tony", f"--workers 2 --name histjob {FAST}", CELL)
    (rec,) = list_jobs()
    assert open_client(rec).wait_am_exit()  # it writes the history on its way out
    hist = json.loads((rec.dir / "history.json").read_text())
    assert hist["job_id"] == rec.id and hist["summary"]["state"] == "SUCCEEDED"
    assert hist["cell_sha256"] == hashlib.sha256((rec.dir / "cell.py").read_bytes()).hexdigest()
    assert hist["spec"]["name"] == "histjob" and hist["attempts"] == []
    assert {t["state"] for t in hist["summary"]["tasks"]} == {"SUCCEEDED"}
    metrics = json.loads((rec.dir / "metrics.json").read_text())["attempts"]["1"]
    assert set(metrics) == {"worker:0", "worker:1"}
    for samples in metrics.values():
        assert any("cpu_percent" in s and s["rss_bytes"] > 0 for s in samples)
        losses = [s["loss"] for s in samples if "loss" in s]
        assert losses and losses[-1] < losses[0]
    assert "gpus" not in json.dumps(metrics)  # no nvidia-smi on this machine's PATH

    listing = commands.list_text()
    assert rec.id in listing and "histjob" in listing and "SUCCEEDED" in listing
    assert "trained" in commands.logs_text(rec.id, "worker:1")
    status = json.loads((rec.dir / "status.json").read_text())
    assert all(t["cpu_percent"] is not None for t in status["tasks"])
