"""What a task uses, sampled by its heartbeat sidecar: CPU % and resident memory of the task's
process with its children (``--procs-per-task`` ranks, a TensorBoard), and, where
``nvidia-smi`` is on PATH, utilization and memory of the GPUs the task may use
(``CUDA_VISIBLE_DEVICES``), as TonY's AM collects them. No nvidia-smi: no ``gpus`` at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import psutil

GPU_QUERY = "index,utilization.gpu,memory.used,memory.total"
GPU_EVERY_S = 5.0  # nvidia-smi takes ~50 ms: not on every heartbeat
GPU_TIMEOUT_S = 5.0


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_gpus(text: str, visible: str | None) -> list[dict]:
    """nvidia-smi's CSV (noheader, nounits) -> the GPUs ``visible`` names (all when unset)."""
    wanted = None
    if visible is not None:
        wanted = {v.strip() for v in visible.split(",") if v.strip()}
    out = []
    for line in text.splitlines():
        cols = line.split(",")
        if len(cols) != 4 or not cols[0].strip().isdigit():
            continue
        if wanted is not None and cols[0].strip() not in wanted:
            continue
        out.append(
            {
                "index": int(cols[0]),
                "utilization": _number(cols[1]),
                "memory_used_mb": _number(cols[2]),
                "memory_total_mb": _number(cols[3]),
            }
        )
    return out


def query_gpus() -> list[dict] | None:
    """The visible GPUs' use now; None when there is no nvidia-smi (or it fails)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        got = subprocess.run(
            [smi, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=GPU_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if got.returncode != 0:
        return None
    return parse_gpus(got.stdout, os.environ.get("CUDA_VISIBLE_DEVICES"))


class Sampler:
    """One task's resource use, sample by sample (``cpu_percent`` is over the time since the
    previous sample, as psutil measures it)."""

    def __init__(self, pid: int, clock=time.monotonic):
        self.task = psutil.Process(pid)
        self.clock = clock
        self.procs: dict[int, psutil.Process] = {}
        self.gpus: list[dict] | None = None
        self.gpus_at = float("-inf")

    def _processes(self) -> list[psutil.Process]:
        try:
            now = [self.task, *self.task.children(recursive=True)]
        except psutil.Error:
            now = [self.task]
        # The same Process objects each time: cpu_percent needs the previous call's times.
        self.procs = {p.pid: self.procs.get(p.pid, p) for p in now}
        return list(self.procs.values())

    def sample(self) -> dict:
        cpu, rss = 0.0, 0
        for p in self._processes():
            try:
                with p.oneshot():
                    cpu += p.cpu_percent(None)
                    rss += p.memory_info().rss
            except psutil.Error:
                continue
        out: dict = {"cpu_percent": round(cpu, 1), "rss_bytes": rss}
        if self.clock() - self.gpus_at >= GPU_EVERY_S:
            self.gpus_at = self.clock()
            self.gpus = query_gpus()
        if self.gpus is not None:
            out["gpus"] = self.gpus
        return out
