"""What the heartbeat sidecar samples: CPU and memory always, GPUs only where nvidia-smi is
(a stub nvidia-smi on PATH stands in for one)."""

import os
import subprocess
import sys

import pytest

from tony_jupyter.executor import resources
from tony_jupyter.executor.resources import Sampler, parse_gpus

SMI_CSV = "0, 87, 3000, 16384\n1, [N/A], 10, 16384\n2, 5, 20, 16384\n"


def test_nvidia_smi_csv_keeps_the_visible_gpus():
    assert [g["index"] for g in parse_gpus(SMI_CSV, None)] == [0, 1, 2]
    got = parse_gpus(SMI_CSV, "1,2")
    assert got[0] == {
        "index": 1,
        "utilization": None,
        "memory_used_mb": 10.0,
        "memory_total_mb": 16384.0,
    }
    assert [g["index"] for g in got] == [1, 2]
    assert parse_gpus("garbage\n", None) == []


@pytest.fixture
def busy_child():
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield proc
    proc.kill()
    proc.wait()


def test_cpu_and_memory_of_the_task_and_its_children_without_gpus(monkeypatch, busy_child):
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no nvidia-smi there
    sampler = Sampler(os.getpid())
    sampler.sample()
    busy_child_seen = False
    for _ in range(50):
        got = sampler.sample()
        busy_child_seen = got["cpu_percent"] > 20
        if busy_child_seen:
            break
        __import__("time").sleep(0.1)
    assert busy_child_seen, got
    assert got["rss_bytes"] > 10 << 20
    assert "gpus" not in got


def test_gpus_from_nvidia_smi_when_it_is_there(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '{SMI_CSV.replace(chr(10), chr(92) + 'n')}'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    got = Sampler(os.getpid()).sample()
    assert got["gpus"] == [
        {"index": 2, "utilization": 5.0, "memory_used_mb": 20.0, "memory_total_mb": 16384.0}
    ]
    assert resources.query_gpus() == got["gpus"]
