"""Part: the side panel and the job page against a long history, through a real Jupyter server.

One real local job (2 workers reporting loss for ``steps`` steps: its history entry written by
the AM's own writers) is measured on disk, then copied under new ids (``bench/history.py``'s
``_fill``) into two homes: a baseline of 10 jobs and a long history of 1,000. Two Jupyter
servers with the extension run on 127.0.0.1, one per home, and the bench alternates A B A B
over HTTP with the server's token: ``GET /tony/api/jobs`` (what the panel loads and polls) and
``GET /tony/api/jobs/<id>/detail`` (what a job page loads). Medians; the first list of each
server (cold: nothing cached, retention pruned) is kept apart. Local only.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.lib.common import Context, free_port, log, median, ratio
from tony_jupyter.am import historyrecord as am_history

NAME = "panel"
ABOUT = "panel list and job-page detail requests, 10 vs 1,000 jobs in the history (real server)"
BASELINE_JOBS = 10


class Server:
    """A Jupyter server with the extension on 127.0.0.1, its jobs in ``home``."""

    def __init__(self, home: Path, tmp: Path):
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"}
        env.update(
            TONY_JUPYTER_HOME=str(home),
            JUPYTER_CONFIG_DIR=str(tmp / "config"),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        )
        self.log = open(tmp / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "server", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={tmp}",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}/"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {self.token}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if self.session.get(self.url + "api/status", timeout=2).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the Jupyter server did not start: {(tmp / 'server.log').read_text()}")

    def get(self, path: str) -> tuple[float, int]:
        """Seconds for one request, and the response's bytes."""
        t0 = time.perf_counter()
        r = self.session.get(self.url + path, timeout=120)
        took = time.perf_counter() - t0
        r.raise_for_status()
        return took, len(r.content)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def run(ctx: Context) -> dict:
    from bench.history import _bytes, _fill, _one_job

    steps, pause = (20, 0.05) if ctx.quick else (300, 0.02)
    n_jobs = 200 if ctx.quick else 1000
    runs = ctx.runs or (2 if ctx.quick else 10)
    saved = {k: os.environ.get(k) for k in ("TONY_JUPYTER_HOME", "HADOOP_CONF_DIR")}
    servers: dict[str, Server] = {}
    with tempfile.TemporaryDirectory(prefix="bench-panel-") as tmp:
        root = Path(tmp)
        os.environ["TONY_JUPYTER_HOME"] = str(root / "real")
        os.environ.pop("HADOOP_CONF_DIR", None)  # the local history only
        try:
            log(f"panel: one real job, {steps} steps")
            src = _one_job(steps, pause)
            entry = [src / f for f in am_history.FILES] + [src / "logs"]
            entry_bytes, whole_dir = _bytes(entry), _bytes([src])
            sizes = {"baseline": BASELINE_JOBS, "long": n_jobs}
            for side, n in sizes.items():
                log(f"panel: {n} history entries, a Jupyter server over them")
                _fill(root / side, src, n)
                (root / f"{side}-server").mkdir()
                servers[side] = Server(root / side, root / f"{side}-server")
            job = "tony_20250101_000000_000000"  # the first copy: in both homes
            rows: dict[str, dict[str, list[float]]] = {s: {"list": [], "detail": []} for s in sizes}
            cold, bytes_ = {}, {}
            for side, server in servers.items():
                cold[side], bytes_[f"{side}_list"] = server.get("tony/api/jobs")
                _, bytes_[f"{side}_detail"] = server.get(f"tony/api/jobs/{job}/detail")
            for _ in range(runs):  # A B A B: the load moves under both sides alike
                for side, server in servers.items():
                    rows[side]["list"].append(server.get("tony/api/jobs")[0])
                    rows[side]["detail"].append(server.get(f"tony/api/jobs/{job}/detail")[0])
        finally:
            for server in servers.values():
                server.stop()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    med = {side: {k: median(v) for k, v in got.items()} for side, got in rows.items()}
    return {
        "steps_reported": steps,
        "history_bytes_per_job": entry_bytes,
        "job_dir_bytes": whole_dir,
        "jobs": sizes,
        "list_s": {side: med[side]["list"] for side in sizes},
        "list_cold_s": {side: round(v, 4) for side, v in cold.items()},
        "list_s_ratio_long_vs_baseline": ratio(med["long"]["list"], med["baseline"]["list"]),
        "detail_s": {side: med[side]["detail"] for side in sizes},
        "detail_s_ratio_long_vs_baseline": ratio(med["long"]["detail"], med["baseline"]["detail"]),
        "response_bytes": bytes_,
        "runs": runs,
        "rounds": rows,
    }
