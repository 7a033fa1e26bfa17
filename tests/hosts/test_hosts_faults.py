"""A worker host cut off mid-training: from a kernel on the edge, a job whose worker runs in the
gpu partition (worker2 or worker3) and whose AM runs on worker1 trains with checkpoints to HDFS;
the worker's host is cut off (`devcluster link HOST down`, as a pulled cable: its processes
run on). The AM must detect it by missed heartbeats and exclude that host; attempt 2 runs on the
other gpu host from the last checkpoint in HDFS and saves newer ones WHILE THE OLD HOST IS STILL
CUT OFF. Then the old host comes back in two steps, with attempt 1's processes still alive:
first everything but the AM's host (a rule on that host: worker1 unreachable), and attempt 1's
chief finds the checkpoints fenced at its next sync (`Fenced`, in its log); then the AM too, and
their heartbeats are answered 410 and they end (killed by their sidecar: TensorFlow's
coordination service takes SIGTERM for a preemption notice and would train on). The job
succeeds, and HDFS holds attempt 2's checkpoint only."""

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
from conftest import exec_argv  # tests/hosts/conftest.py

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
MAX_MISSED, EPOCHS = 8, 60  # edge_fault.py's, at one heartbeat a second
GPU_HOSTS = {"worker2": "nm2", "worker3": "nm3"}  # the gpu partition's hosts and NodeManagers
FENCED = "has started: this task of attempt 1 writes no more checkpoints"
REFUSED = "the AM refused this task's heartbeat (410"


def _devcluster(cluster, *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", argv[0], "--dir", str(cluster.dir)]
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


def _said(cluster, nm: str, container: str, words: str) -> list[str]:
    """Lines with ``words`` in a container's logs (stdout, stderr) on NodeManager ``nm``."""
    return [
        line.strip()[:240]
        for f in sorted(cluster.layout.nm_log_dir(nm).glob(f"*/{container}/std*"))
        for line in f.read_text(errors="replace").splitlines()
        if words in line
    ]


def _until(what: str, check, timeout: float, poll: float = 0.5):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(poll)
    return found


@pytest.mark.timeout(2700)  # a first job from the edge packs the venv (minutes)
def test_a_host_cut_off_mid_training_is_replaced_and_fenced_when_it_comes_back(
    hosts_cluster, node_venv, tmp_path
):
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    for script in ("edge_fault.py", "edge_kernel.py"):  # the script and what it imports
        shutil.copy(HERE / script, notebook)
    name = f"hosts-cut-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "TONY_JUPYTER_HOME": str(tmp_path / "tony-home")}
    proc = subprocess.Popen(
        exec_argv(hosts_cluster, "edge", str(node_venv / "bin" / "python"), "edge_fault.py", name),
        cwd=notebook,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cut_host = rule = None
    cut = back = fenced_at = refused_at = None
    try:
        strike = _wait_for(notebook / f"{name}.strike", proc, 1500)
        # Attempt 1's AM on worker1, its worker in the gpu partition: that host is cut off.
        assert strike["am_host"] == "worker1", strike
        assert {host for host, _, _ in strike["tasks"].values()} <= set(GPU_HOSTS), strike
        cut_host = strike["tasks"]["worker:0"][0]
        (other,) = set(GPU_HOSTS) - {cut_host}
        old = {tid: (pid, c) for tid, (host, pid, c) in strike["tasks"].items() if host == cut_host}
        assert strike["hdfs"]["number"], strike  # a checkpoint on HDFS to resume from
        down = _devcluster(hosts_cluster, "link", cut_host, "down")
        cut = time.time()
        assert down.returncode == 0, down.stderr
        detected = _wait_for(notebook / f"{name}.detected", proc, 120)
        resumed = _wait_for(notebook / f"{name}.resumed", proc, 900)
        # Attempt 2 trains on the other host and has saved newer checkpoints: the old host is
        # still cut off, and attempt 1's processes on it still run.
        alive_at_return = [tid for tid, (pid, _) in old.items() if _alive(pid)]
        assert sorted(alive_at_return) == sorted(old), f"attempt 1's {old} did not outlive the cut"
        # The old host comes back, but not yet to the AM's host (worker1; the AM's HTTP port and
        # its heartbeat stream's): its tasks cannot report, and what stops the chief's
        # checkpoint writes is the fence alone (read from the NameNode, on master).
        rule = ["to", "198.18.0.21/32", "ipproto", "tcp", "prohibit", "pref", "100"]
        added = _devcluster(hosts_cluster, "exec", cut_host, "--", "ip", "rule", "add", *rule)
        assert added.returncode == 0, added.stderr
        up = _devcluster(hosts_cluster, "link", cut_host, "up")
        back = time.time()
        assert up.returncode == 0, up.stderr
        nm, (chief_pid, chief_container) = GPU_HOSTS[cut_host], old["worker:0"]
        fenced = _until(
            "attempt 1's chief's checkpoint sync fenced",
            lambda: _said(hosts_cluster, nm, chief_container, FENCED),
            120,
        )
        fenced_at = time.time()
        assert _alive(chief_pid), "attempt 1's chief ended before the AM could refuse it"
        _devcluster(hosts_cluster, "exec", cut_host, "--", "ip", "rule", "del", *rule)
        rule = None
        # Now they reach the AM: their heartbeats are refused (410) and they end.
        _until(
            "attempt 1's processes ended",
            lambda: not any(_alive(pid) for pid, _ in old.values()),
            60,
        )
        refused_at = time.time()
        refused = {tid: _said(hosts_cluster, nm, c, REFUSED) for tid, (_, c) in old.items()}
        out, err = proc.communicate(timeout=1200)
    finally:
        if rule is not None:
            _devcluster(hosts_cluster, "exec", cut_host, "--", "ip", "rule", "del", *rule)
        if cut_host is not None and back is None:
            _devcluster(hosts_cluster, "link", cut_host, "up")  # never leave it cut off
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    result = json.loads((notebook / f"{name}.json").read_text())
    assert "error" not in result, result
    # Detected by missed heartbeats of a task on the cut host, within the heartbeats' window,
    # and that host excluded from attempt 2's placement.
    assert detected["task"] in old, detected
    assert f"missed {MAX_MISSED} heartbeats" in detected["reason"], detected
    assert f"its host {cut_host} is excluded" in detected["reason"], detected
    assert detected["time"] - cut < MAX_MISSED + 10, (cut, detected)
    # Attempt 2 ran on the other host while the old one was cut off, from the checkpoint that
    # HDFS held, and wrote newer ones before the link came back.
    # (Attempt 2 as a rule: the attempt after it when its first write to HDFS went to the cut
    # host's DataNode before the NameNode had marked it stale, and timed out.)
    new = resumed["attempt"]
    assert {host for host, _, _ in resumed["tasks"].values()} == {other}, resumed
    assert all(a == new for _, _, a in resumed["tasks"].values()), resumed
    assert resumed["time"] < back
    assert resumed["hdfs"]["number"] >= (detected["hdfs"]["number"] or 0) + 2, resumed
    assert resumed["hdfs"]["fence"] == new, resumed
    assert result["state"].endswith("SUCCEEDED"), result
    assert result["attempt"] == new and result["where"] == other, result
    assert {host for host, _, _ in result["tasks"].values()} == {other}, result
    assert 1 <= result["first_epoch"] <= detected["hdfs"]["number"], (result, detected)
    assert result["epochs_run"] == EPOCHS - result["first_epoch"], result
    assert [a[:2] for a in result["attempts"]][:1] == [[1, detected["task"]]], result
    assert len(result["attempts"]) == new - 1, result
    # The old attempt back: its chief's checkpoint sync refused by the fence, every task's
    # heartbeat refused by the AM (410); HDFS holds attempt 2's last checkpoint alone (one
    # written by attempt 1 after the fence would be left beside it: attempt 2 deletes only what
    # it wrote or restored).
    assert fenced, fenced
    assert all(refused.values()), refused
    end = result["hdfs_at_end"]
    assert end["fence"] == new and end["checkpoints"] == [end["index"]], end
    assert end["number"] > resumed["hdfs"]["number"], (end, resumed)
    started = [e["time"] for e in result["events"] if e["attempt"] == 2 and e["state"] == "STARTED"]
    if new > 2:
        print(f"\n[note] attempt 2 failed: {result['attempts'][1:]}")
    print(
        "\n[figures] "
        + json.dumps(
            {
                "cut_host": cut_host,
                "attempt_that_resumed": new,
                "replacement_host": other,
                "detected_after_cut_s": round(detected["time"] - cut, 1),
                "attempt2_started_after_cut_s": round(started[0] - cut, 1) if started else None,
                "training_resumed_after_cut_s": round(result["resumed_at"] - cut, 1),
                "newer_checkpoint_on_hdfs_after_cut_s": round(resumed["time"] - cut, 1),
                "link_back_after_cut_s": round(back - cut, 1),
                "fenced_after_link_back_s": round(fenced_at - back, 1),
                "old_processes_ended_after_am_reachable_s": round(refused_at - fenced_at, 1),
                "struck_at_epoch": strike["epoch"],
                "checkpoint_at_detection": detected["hdfs"]["number"],
                "resumed_at_epoch": result["first_epoch"],
                "old_processes_alive_at_link_up": len(alive_at_return),
                "fenced_line": fenced[0],
                "refused_lines": {tid: lines[:1] for tid, lines in refused.items()},
                "venv_upload_bytes": result["pack_env"].get("bytes_uploaded"),
            }
        )
    )
