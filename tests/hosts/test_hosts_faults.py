"""A worker host cut off mid-training: from a kernel on the edge, a job whose two workers run on
worker2 (the gpu partition) and whose AM runs on worker1 trains with checkpoints to HDFS; its
link is taken down (`devcluster link worker2 down`, as a pulled cable: worker2's processes run
on). The AM must detect it by missed heartbeats, naming a task on worker2; once the link is back,
attempt 2 runs on worker2 from the last checkpoint in HDFS and the job succeeds, while attempt
1's processes, alive through the cut, are gone (their next heartbeat is answered 410 and their
sidecar ends them; their NodeManager ends their released containers)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
MAX_MISSED = 8  # edge_fault.py's, at one heartbeat a second


def _devcluster(cluster, *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tony_jupyter.devcluster", argv[0], "--dir", str(cluster.dir)]
    return subprocess.run([*cmd, *argv[1:]], capture_output=True, text=True, check=False)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=60) if proc.poll() is None else proc.communicate()
            raise AssertionError(f"no {path.name}: {out[-3000:]}{err[-3000:]}")
        time.sleep(0.05)
    time.sleep(0.05)  # written whole by then (a few hundred bytes)
    return json.loads(path.read_text())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _said(cluster, app_id: str, words: str) -> list[str]:
    """Lines with ``words`` in the logs of the app's attempt-1 containers on worker2."""
    logs = cluster.layout.nm_log_dir("nm2") / app_id
    return [
        line.strip()[:200]
        for f in sorted(logs.glob("container_*_01_*/std*"))
        for line in f.read_text(errors="replace").splitlines()
        if words in line
    ]


@pytest.mark.timeout(2400)  # a first job from the edge packs the venv (minutes)
def test_a_worker_host_cut_off_mid_training_is_detected_and_the_job_resumes_after(
    hosts_cluster, node_venv, tmp_path
):
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    for script in ("edge_fault.py", "edge_kernel.py"):  # the script and what it imports
        shutil.copy(HERE / script, notebook)
    name = f"hosts-cut-{uuid.uuid4().hex[:6]}"
    cmd = [sys.executable, "-m", "tony_jupyter.devcluster", "exec", "--dir", str(hosts_cluster.dir)]
    env = {**os.environ, "TONY_JUPYTER_HOME": str(tmp_path / "tony-home")}
    proc = subprocess.Popen(
        [*cmd, "edge", "--", str(node_venv / "bin" / "python"), "edge_fault.py", name],
        cwd=notebook,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cut = back = None
    try:
        strike = _wait_for(notebook / f"{name}.strike", proc, 1500)
        # Attempt 1's AM on worker1, both workers on worker2: the cut spares the AM.
        assert strike["am_host"] == "worker1", strike
        assert {host for host, _, _ in strike["tasks"].values()} == {"worker2"}, strike
        pids = [pid for _, pid, _ in strike["tasks"].values()]
        down = _devcluster(hosts_cluster, "link", "worker2", "down")
        cut = time.time()
        assert down.returncode == 0, down.stderr
        detected = _wait_for(notebook / f"{name}.detected", proc, 120)
        # The old attempt lives on behind the cut (its sidecar gives up on the AM only after
        # twice the heartbeats the AM waits for), so what follows is the fence, not a suicide.
        alive_at_return = [pid for pid in pids if _alive(pid)]
        up = _devcluster(hosts_cluster, "link", "worker2", "up")
        back = time.time()
        assert up.returncode == 0, up.stderr
        out, err = proc.communicate(timeout=1200)
    finally:
        if back is None:
            _devcluster(hosts_cluster, "link", "worker2", "up")  # never leave it cut off
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    result = json.loads((notebook / f"{name}.json").read_text())
    assert "error" not in result, result
    # Detected by missed heartbeats, naming a task on worker2, within the heartbeats' window.
    assert detected["task"] in ("worker:0", "worker:1"), detected
    assert f"missed {MAX_MISSED} heartbeats" in detected["reason"], detected
    assert detected["time"] - cut < MAX_MISSED + 10, (cut, detected)
    assert alive_at_return, f"attempt 1's processes {pids} did not outlive the cut"
    # Attempt 2 ran on worker2 once it was back, from the checkpoint in HDFS, and finished.
    assert result["state"].endswith("SUCCEEDED"), result
    assert result["attempt"] == 2 and result["where"] == "worker2", result
    assert result["first_epoch"] >= 1, result
    assert result["epochs_run"] == 40 - result["first_epoch"], result
    assert [a[:2] for a in result["attempts"]] == [[1, detected["task"]]], result
    # Attempt 1's processes are gone.
    deadline = time.monotonic() + 60
    while left := [pid for pid in pids if _alive(pid)]:
        assert time.monotonic() < deadline, f"attempt 1's processes {left} outlived it"
        time.sleep(0.5)
    started = [e["time"] for e in result["events"] if e["attempt"] == 2 and e["state"] == "STARTED"]
    print(
        "\n[figures] "
        + json.dumps(
            {
                "detected_after_cut_s": round(detected["time"] - cut, 1),
                "link_back_after_cut_s": round(back - cut, 1),
                "attempt2_started_after_cut_s": round(started[0] - cut, 1) if started else None,
                "training_resumed_after_cut_s": round(result["resumed_at"] - cut, 1),
                "struck_at_epoch": strike["epoch"],
                "resumed_at_epoch": result["first_epoch"],
                "old_processes_alive_at_link_up": len(alive_at_return),
                "old_attempt_refused_410": _said(hosts_cluster, result["job_id"], "is over"),
                "venv_upload_bytes": result["pack_env"].get("bytes_uploaded"),
            }
        )
    )
