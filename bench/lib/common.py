"""What every part shares: the ``Context`` its ``run`` gets, the machine's description, medians
and percentiles, same-run ratios, results on disk, and whether a devcluster is there to use."""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent.parent
RESULTS = BENCH / "results"
REPO = BENCH.parent


@dataclass(frozen=True)
class Context:
    """What ``python -m bench`` hands every part's ``run(ctx) -> dict``."""

    quick: bool = False  # CI's smoke run: small counts, one round, local only
    runs: int | None = None  # --runs: rounds per comparison; None: the part's own default
    cluster: object | None = None  # the running devcluster (DevCluster) to use, or None
    args: argparse.Namespace = field(default_factory=argparse.Namespace)  # its add_arguments'


def machine() -> dict:
    def version(cmd: list[str]) -> str:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return "absent"
        return (out.stdout + out.stderr).strip().splitlines()[0] if out.returncode == 0 else "?"

    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as pkg

    def pkg_version(name: str) -> str:
        try:
            return pkg(name)
        except PackageNotFoundError:
            return "absent"

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": pkg_version("tensorflow"),
        "tf_keras": pkg_version("tf-keras"),
        "tony_jupyter": pkg_version("tony-jupyter"),
        "java": version(["java", "-version"]),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "hostname_hash": hash(socket.gethostname()) & 0xFFFF,
    }


def median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 4) if xs else None


def pct(xs: list[float], q: float) -> float | None:
    """The q-th percentile (0..100), nearest rank: honest for small samples."""
    if not xs:
        return None
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return round(s[k], 4)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def interleave(runs: int, sides: dict[str, Callable[[], dict]], log=None) -> dict[str, list]:
    """A B A B ...: each side once per round, so drift on a noisy machine hits all alike.
    A side that raises is recorded as an error for that round, not a broken bench."""
    got: dict[str, list] = {name: [] for name in sides}
    for r in range(runs):
        for name, fn in sides.items():
            t = time.monotonic()
            try:
                row = fn()
            except Exception as e:  # noqa: BLE001 - a side failing is a finding, kept in the JSON
                row = {"error": f"{type(e).__name__}: {e}"[:2000]}
            got[name].append(row)
            if log:
                log(f"  round {r + 1}/{runs} {name}: {_brief(row)} ({time.monotonic() - t:.1f} s)")
    return got


def _brief(row: dict) -> str:
    if "error" in row:
        return "ERROR " + row["error"].splitlines()[0][:200]
    return ", ".join(f"{k}={v:.3g}" for k, v in row.items() if isinstance(v, float))[:200]


def column(rows: list[dict], key: str) -> list[float]:
    return [r[key] for r in rows if isinstance(r.get(key), (int, float))]


def results_dir(quick: bool) -> Path:
    """--quick (CI's smoke run) writes beside, never over, the figures the README quotes."""
    return RESULTS / "quick" if quick else RESULTS


def write_result(name: str, data: dict) -> Path:
    out = results_dir(bool(data.get("quick")))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def devcluster():
    """The running devcluster (default dir or $TONY_JUPYTER_DEVCLUSTER_DIR), or None. The bench
    never starts or stops one: other people's jobs may be using it."""
    try:
        from tony_jupyter_devcluster import DevCluster

        cluster = DevCluster()
        return cluster if cluster.is_running() else None
    except Exception:  # noqa: BLE001 - no Java, no state: simply no cluster
        return None


def use_devcluster_env(cluster) -> None:
    """Point this process (and the YARN backend's HadoopConf) at ``cluster``."""
    os.environ.update(cluster.env())


def am_rss(app_id: str) -> int:
    """The YARN AM's Python process (its JVM is in-process) - not the container's bash wrapper."""
    best = 0
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "tony_jupyter.am" in cmd and app_id in cmd:
            best = max(best, p.memory_info().rss)
    return best


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python() -> str:
    return sys.executable


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
