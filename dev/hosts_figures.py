"""Figures of a several-host devcluster (`devcluster up --hosts`), printed as JSON (issue 27's
closing note): cell -> user code from a kernel on the edge vs from a kernel beside a one-host
devcluster (rounds alternating A B, medians), the bytes a first and a second job from the edge
upload (its venv, packed by default there), and how long `tony-jupyter doctor` takes on the edge.

    python dev/hosts_figures.py --hosts-dir /tmp/dc-edge [--one-host-dir DIR] [--runs 3]
        [--venv VENV]

Run as root (`devcluster exec`). Both clusters must be running; the one-host one defaults to
the default devcluster dir. VENV: a venv on the nodes' own interpreter for the edge's kernel
(tests/hosts/nodeenv.py builds one; default: built here, in a temporary dir). Each job is one
worker's trivial cell, `--no-tensorboard`, in a fresh kernel process (a kernel's first job).
The first edge job's upload is 0 bytes when an earlier job already left the same packed venv in
HDFS (content-addressed): then `first_upload_cached` is true, and `archive_bytes` (the packed
venv's size in HDFS) is what the job that packed it uploaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
CELL = "import time\nstarted = time.time()\n"
MARK = "hosts-figures: "
FLAGS = "--workers 1 --memory 512m --no-tensorboard --pull started --async"


def one_cell(name: str) -> None:
    """In a fresh kernel: one %%tony cell; prints {cell_to_user_code_s, pack_env} as JSON."""
    from IPython.core.interactiveshell import InteractiveShell

    from tony_jupyter.launcher.client import jobs_dir

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tony_jupyter")
    t0 = time.time()
    job = ip.run_cell_magic("tony", f"{FLAGS} --name {name}", CELL)
    job.result(timeout=900)
    record = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())
    out = {
        "cell_to_user_code_s": ip.user_ns["started"] - t0,
        "pack_env": record.get("pack_env") or {},
    }
    if record.get("pack_env"):  # the archive's size: what the job that uploaded it sent
        import requests

        fs = os.environ["TONY_DEVCLUSTER_WEBHDFS_URL"]
        st = requests.get(
            f"{fs}/webhdfs/v1{record['pack_env']['path']}",
            params={"op": "GETFILESTATUS", "user.name": "root"},
            timeout=30,
        ).json()
        out["pack_env"]["archive_bytes"] = st["FileStatus"]["length"]
    print(f"\n{MARK}{json.dumps(out)}", flush=True)  # the job's own output may end a line


def _last_json(proc: subprocess.CompletedProcess) -> dict:
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line.removeprefix(MARK))
    raise RuntimeError(f"no result (exit {proc.returncode}): {proc.stderr[-2000:]}")


def _devcluster(*argv: str) -> list[str]:
    return [sys.executable, "-m", "tony_jupyter_devcluster", *argv]


def on_edge(hosts_dir: Path, venv: Path, home: Path, argv: list[str]) -> tuple[float, object]:
    """``argv`` run by the edge's venv Python on the edge, in a fresh notebook dir; (seconds,
    its completed process)."""
    notebook = Path(tempfile.mkdtemp(prefix="tony-hosts-nb-"))
    env = {**os.environ, "TONY_JUPYTER_HOME": str(home)}
    cmd = _devcluster("exec", "--dir", str(hosts_dir), "edge", "--", str(venv / "bin/python"))
    t0 = time.monotonic()
    proc = subprocess.run(
        [*cmd, *argv], cwd=notebook, env=env, capture_output=True, text=True, timeout=1800
    )
    return time.monotonic() - t0, proc


def on_one_host(one_host_dir: Path | None, home: Path) -> dict:
    from tony_jupyter_devcluster import DevCluster

    env = {k: v for k, v in os.environ.items() if not k.startswith("TONY_DEVCLUSTER")}
    env.pop("TONY_JUPYTER_DEVCLUSTER_DIR", None)
    env.update(DevCluster(one_host_dir).env())
    env["TONY_JUPYTER_HOME"] = str(home)
    notebook = Path(tempfile.mkdtemp(prefix="tony-onehost-nb-"))
    name = f"figures-onehost-{uuid.uuid4().hex[:6]}"
    proc = subprocess.run(
        [sys.executable, str(HERE), "cell", name],
        cwd=notebook,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return _last_json(proc)


def figures(args: argparse.Namespace) -> dict:
    venv = args.venv or _build_venv()
    home = Path(tempfile.mkdtemp(prefix="tony-figures-home-"))
    script = str(HERE)

    def edge_cell() -> dict:
        _, proc = on_edge(args.hosts_dir, venv, home, [script, "cell", f"figures-edge-{_tag()}"])
        return _last_json(proc)

    first = edge_cell()  # the venv packed and uploaded (or found in HDFS already)
    second = edge_cell()
    edge, one_host = [], []
    for _ in range(args.runs):
        edge.append(edge_cell()["cell_to_user_code_s"])
        one_host.append(on_one_host(args.one_host_dir, home)["cell_to_user_code_s"])
    from tony_jupyter_devcluster import DevCluster

    node_python = str(DevCluster(args.hosts_dir).hosts.python)  # type: ignore[union-attr]
    doctor, doctor_rc = [], []
    for _ in range(args.runs):
        seconds, proc = on_edge(
            args.hosts_dir,
            venv,
            home,
            ["-m", "tony_jupyter.cli", "doctor", "--python", node_python],
        )
        doctor.append(seconds)
        doctor_rc.append(proc.returncode)
    return {
        "runs": args.runs,
        "cell_to_user_code_s": {
            "hosts_edge_median": statistics.median(edge),
            "one_host_median": statistics.median(one_host),
            "ratio": statistics.median(edge) / statistics.median(one_host),
            "hosts_edge": edge,
            "one_host": one_host,
            "first_edge_job": first["cell_to_user_code_s"],
        },
        "upload_bytes": {
            "first_job": first["pack_env"].get("bytes_uploaded"),
            "second_job": second["pack_env"].get("bytes_uploaded"),
            "first_upload_cached": first["pack_env"].get("bytes_uploaded") == 0,
            "archive_bytes": first["pack_env"].get("archive_bytes"),
            "pack_env": first["pack_env"],
        },
        "doctor_on_edge_s": {
            "median": statistics.median(doctor),
            "runs": doctor,
            "exit_codes": doctor_rc,
        },
    }


def _tag() -> str:
    return uuid.uuid4().hex[:6]


def _build_venv() -> Path:
    sys.path.insert(0, str(HERE.parents[1] / "tests" / "hosts"))
    import nodeenv

    from tony_jupyter_devcluster.hosts import node_python

    python = node_python()
    if python is None:
        raise SystemExit("no interpreter of this kernel's version for the nodes")
    return nodeenv.build(Path(tempfile.mkdtemp(prefix="tony-nodeenv-")), python, nodeenv.ROOTS)


def main() -> None:
    if sys.argv[1:2] == ["cell"]:
        one_cell(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts-dir", type=Path, required=True)
    parser.add_argument("--one-host-dir", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--venv", type=Path, default=None)
    print(json.dumps(figures(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
