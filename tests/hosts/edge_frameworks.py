"""Run on the edge host (`devcluster exec edge -- VENV/bin/python edge_frameworks.py NAME`),
VENV being a node venv with PyTorch and JAX (no TensorFlow): a Jupyter server with the server
extension, and a kernel, both on the edge, as a notebook's would be. The kernel runs two jobs
and the script writes what each showed (or the error it raised) as JSON to NAME.json:

- ``ddp``: PyTorch DDP (gloo, CPU) with ``--workers 2 --procs-per-task 2`` (default queue:
  worker1, where its AM is too, so that the venv is localized on one node only): the ranks,
  their tasks and hosts, and the rendezvous address (MASTER_ADDR) each reached. While it
  runs, the Jupyter server's panel API (``/tony/api/jobs``, ``/tony/api/jobs/<id>``) lists it
  and its tasks, and its TensorBoard answers through the server extension's proxy
  (``/tony/proxy/<id>/tensorboard/``, the widget's iframe's path); then the kernel lets the
  job end (a file in HDFS that rank 0 waits for);
- ``jax``: ``jax.distributed`` on two workers (default queue: worker1): the processes, their
  hosts and the coordinator's address.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import traceback
import uuid
from pathlib import Path

import edge_kernel  # beside this script
import requests

from tony_jupyter.data import filesystem
from tony_jupyter.launcher.client import jobs_dir

RM = os.environ["TONY_DEVCLUSTER_RM_URL"]
USER = {"user.name": "root"}

# Every rank: a gloo all-reduce of the ranks, a few DDP steps with report(), then what it saw
# gathered to rank 0 (the chief's process, whose names --pull brings back). Rank 0 then waits
# (bounded) for GO in HDFS, so that the kernel looks at the running job before it ends.
DDP = """
import os, socket, time
import torch, torch.distributed as dist, tony_jupyter
from tony_jupyter.data import filesystem
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank)])
dist.all_reduce(total)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
for step in range(1, 21):
    x = torch.randn(32, 4, generator=g)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    tony_jupyter.report(step=step, loss=loss.item(), total_steps=20)
me = {"rank": rank, "world": world, "local": int(os.environ["LOCAL_RANK"]),
      "task": os.environ["TONY_TASK_ID"], "host": socket.gethostname(),
      "master": f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
      "master_ip": socket.gethostbyname(os.environ["MASTER_ADDR"]),
      "sum": total.item()}
ranks = [None] * world
dist.all_gather_object(ranks, me)
if rank == 0:
    fs, path = filesystem(GO)
    deadline = time.monotonic() + 600
    while fs.get_file_info(path).type.name == "NotFound" and time.monotonic() < deadline:
        time.sleep(0.5)
dist.barrier()
dist.destroy_process_group()
"""

# Every process: a psum across processes and its host; gathered to all (process_allgather).
JAX = """
import os, socket
import numpy as np, jax, jax.numpy as jnp
from jax.experimental import multihost_utils
jax.distributed.initialize()
pid, n = jax.process_index(), jax.process_count()
total = float(jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(jnp.array([pid + 1.0]))[0])
name = np.frombuffer(socket.gethostname().encode().ljust(32), dtype=np.uint8)
hosts = [bytes(h).decode().strip() for h in multihost_utils.process_allgather(name)]
coordinator = os.environ["JAX_COORDINATOR_ADDRESS"]
seen = {"pid": pid, "n": n, "total": total, "hosts": hosts, "coordinator": coordinator,
        "coordinator_ip": socket.gethostbyname(coordinator.rpartition(":")[0]),
        "task": os.environ["TONY_TASK_ID"]}
jax.distributed.shutdown()
"""


def jupyter_server(home: Path) -> tuple[subprocess.Popen, str, dict]:
    """A Jupyter server of this venv on the edge's loopback, with the extension, sharing the
    kernel's TONY_JUPYTER_HOME; (process, base URL, auth header) once it answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    argv = [sys.executable, "-m", "jupyter_server", "--allow-root", "--no-browser"]
    argv += [f"--ServerApp.{k}={v}" for k, v in (("ip", "127.0.0.1"), ("port", port))]
    argv += [f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"]
    argv += ["--ServerApp.jpserver_extensions={'tony_jupyter': True}"]
    log = (home / "jupyter-server.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    base, auth = f"http://127.0.0.1:{port}/", {"Authorization": f"token {token}"}
    deadline = time.monotonic() + 120
    while True:
        try:
            if requests.get(base + "tony/api/jobs", headers=auth, timeout=5).ok:
                return proc, base, auth
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the Jupyter server did not answer: see {log.name}")
        time.sleep(0.5)


def until(what: str, timeout: float, probe):
    deadline = time.monotonic() + timeout
    while not (got := probe()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.5)
    return got


def ddp(ip, out: dict, base: str, auth: dict, tag: str) -> None:
    go = f"{os.environ['TONY_DEVCLUSTER_FS']}/user/root/edge-go-{tag}"
    ip.user_ns["GO"] = go
    flags = "--framework pytorch --workers 2 --procs-per-task 2 --memory 2g"
    flags += " --pull ranks --async --name edge-ddp"
    t0 = time.monotonic()
    job = ip.run_cell_magic("tony", flags, DDP)  # returns once the AM is up: the venv is on worker1
    submitted = time.monotonic()
    api = base + "tony/api/jobs"

    def running_tasks() -> dict | None:
        snap = requests.get(f"{api}/{job.job_id}", headers=auth, timeout=30).json()
        if snap["state"] in ("SUCCEEDED", "FAILED", "KILLED"):
            raise RuntimeError(f"the job ended before it was looked at: {snap}")
        ok = snap.get("endpoints", {}).get("tensorboard") and snap["state"] == "RUNNING"
        return snap if ok and all(t["state"] == "RUNNING" for t in snap["tasks"]) else None

    def reported() -> dict | None:
        snap = running_tasks()
        return snap if snap and snap["tasks"][0]["progress"].get("step") == 20 else None

    try:
        snap = until("the running job's tasks and TensorBoard", 900, running_tasks)
        to_running = round(time.monotonic() - submitted, 1)
        try:  # rank 0's last report() (it waits for GO after it), shown in the panel
            snap = until("rank 0's last report() in the panel", 120, reported)
        except TimeoutError:
            pass  # the test shows what the panel had
        rows = requests.get(api, headers=auth, timeout=30).json()["jobs"]
        row = next(r for r in rows if r["job_id"] == job.job_id)
        proxy = f"{base}tony/proxy/{job.job_id}/tensorboard/"
        runs = until(
            "TensorBoard through the server extension's proxy",
            120,
            lambda: _json_list(requests.get(proxy + "data/runs", headers=auth, timeout=30)),
        )
        page = requests.get(proxy, headers=auth, timeout=30)
        anonymous = requests.get(proxy + "data/runs", timeout=30, allow_redirects=False)
        app = requests.get(f"{RM}/ws/v1/cluster/apps/{job.job_id}", params=USER, timeout=10)
        panel = {
            "row": {k: row.get(k) for k in ("backend", "state", "endpoints", "name")},
            "tasks": {t["id"]: [t["state"], t["host"]] for t in snap["tasks"]},
            "progress": snap["tasks"][0]["progress"],
            "submitted_to_running_s": to_running,
            "am_host": app.json()["app"].get("amHostHttpAddress", ""),
            "proxy_runs": runs,
            "proxy_page_ok": page.ok and "tb-relative-root" in page.text,
            "anonymous_status": anonymous.status_code,
        }
    finally:  # let rank 0 end the job (or it gives up waiting, after 600 s)
        fs, path = filesystem(go)
        with fs.open_output_stream(path) as f:
            f.write(b"go")
    job.result(timeout=600)
    app = edge_kernel.wait_app_end(job.job_id)
    record = json.loads((jobs_dir() / job.job_id / "yarn.json").read_text())
    out["ddp"] = {
        "job_id": job.job_id,
        "pack_env": record["pack_env"],
        # From the upload's end to the AM's start: the venv's localization on worker1, mostly.
        "am_up_s": round(submitted - t0 - record["pack_env"]["seconds"], 1),
        "ranks": ip.user_ns["ranks"],
        "final": [app["state"], app["finalStatus"]],
        **panel,
    }
    after = requests.get(f"{api}/{job.job_id}", headers=auth, timeout=30).json()
    out["ddp"]["state_after"] = after.get("state")


def _json_list(r: requests.Response) -> list | None:
    try:
        got = r.json() if r.ok else None
    except ValueError:
        return None
    return got if isinstance(got, list) else None


def jax(ip, out: dict) -> None:
    flags = "--framework jax --workers 2 --memory 1g --no-tensorboard --pull seen"
    job = ip.run_cell_magic("tony", f"{flags} --async --name edge-jax", JAX)
    job.result(timeout=900)
    app = edge_kernel.wait_app_end(job.job_id)
    out["jax"] = {
        "job_id": job.job_id,
        "seen": ip.user_ns["seen"],
        "final": [app["state"], app["finalStatus"]],
    }


def main(name: str) -> None:
    home = Path(os.environ["TONY_JUPYTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    ip = edge_kernel.kernel(data=False)
    out: dict = {}
    tag = uuid.uuid4().hex[:6]
    t0 = time.monotonic()
    server, base, auth = jupyter_server(home)
    out["server"] = {"seconds": round(time.monotonic() - t0, 1)}
    steps = [("ddp", lambda: ddp(ip, out, base, auth, tag)), ("jax", lambda: jax(ip, out))]
    try:
        for step, run in steps:
            t0 = time.monotonic()
            try:
                run()
            except Exception:  # noqa: BLE001 - reported per feature, for the test to show
                out[step] = {"error": traceback.format_exc()[-3000:]}
            out[step]["seconds"] = round(time.monotonic() - t0, 1)
            print(f"{step}: {json.dumps(out[step], default=str)[:300]}", flush=True)
    finally:
        server.terminate()
        server.wait(30)
    Path(f"{name}.json").write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
