"""The GPU path for real, on a machine with an NVIDIA GPU (not part of the suite: CI has none).

Runs ``%%tony --gpus 1`` cells on the local backend from an IPython shell, as a notebook's
kernel would, and prints one JSON object: for PyTorch (DDP over NCCL) a kernel's first job, then
later ones (warm: spare executors that imported torch under the task's
``CUDA_VISIBLE_DEVICES``), each with cell -> first training step and what the task saw (its
device, ``CUDA_VISIBLE_DEVICES``, the GPU use its heartbeats reported); the same script started
by hand as the baseline; and a JAX job on the GPU. Each PyTorch run says where its time went
between user code and the first step (the import, moving the model to the GPU, DDP's set-up,
the step). Usage::

    python dev/gpu_check.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from IPython.core.interactiveshell import InteractiveShell

# One DDP process on the task's GPU; STARTED is when the cell's code began (the kernel's clock:
# the local backend runs on this host).
TORCH = """
import os, time
STARTED = time.time()
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
MARKS = {"imported": time.time()}
dist.init_process_group("nccl")
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                          torch.nn.Linear(1024, 10)).to(dev)
MARKS["on_gpu"] = time.time()
model = DDP(net, device_ids=[dev.index])
MARKS["ddp"] = time.time()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(8192, 1024, device=dev); y = torch.randint(0, 10, (8192,), device=dev)
FIRST_STEP, losses = None, []
t_loop = time.time()
while time.time() - t_loop < STEPS_FOR_S:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if FIRST_STEP is None:
        torch.cuda.synchronize(); FIRST_STEP = time.time()
    losses.append(loss.item())
steps_per_s = len(losses) / (time.time() - FIRST_STEP)
device = torch.cuda.get_device_name(dev)
visible = os.environ.get("CUDA_VISIBLE_DEVICES")
falls = losses[-1] < losses[0]
dist.destroy_process_group()
"""

JAX = """
import os, time
import jax, jax.numpy as jnp
jax.distributed.initialize()
devices = [f"{d.platform}:{d.device_kind}" for d in jax.local_devices()]
w = jnp.zeros((512,)); X = jax.random.normal(jax.random.PRNGKey(0), (4096, 512))
y = X @ jnp.arange(512.0) / 512
grad = jax.jit(jax.grad(lambda w: jnp.mean((X @ w - y) ** 2)))
for _ in range(200):
    w = w - 0.5 * grad(w)
jax_loss = float(jnp.mean((X @ w - y) ** 2))
visible = os.environ.get("CUDA_VISIBLE_DEVICES")
"""

PULL = "STARTED,MARKS,FIRST_STEP,steps_per_s,device,visible,falls"


def _gpus(job) -> list[dict]:
    snap = job.wait(timeout=600)
    return [
        {"task": t.id, "state": str(t.state.value), "gpus": [g.to_json() for g in t.gpus]}
        for t in snap.tasks
    ]


def _torch_job(ip: InteractiveShell, name: str, steps_for_s: float) -> dict:
    ip.user_ns["STEPS_FOR_S"] = steps_for_s
    t0 = time.time()
    flags = f"--framework pytorch --workers 1 --gpus 1 --no-tensorboard --pull {PULL}"
    job = ip.run_cell_magic("tony", f"{flags} --async --name {name}", TORCH)
    job.result(timeout=600)
    ns = ip.user_ns
    return {
        "cell_to_user_code_s": round(ns["STARTED"] - t0, 3),
        **_marks(ns["STARTED"], ns["MARKS"], ns["FIRST_STEP"]),
        "cell_to_first_step_s": round(ns["FIRST_STEP"] - t0, 3),
        "steps_per_s": round(ns["steps_per_s"], 1),
        "device": ns["device"],
        "CUDA_VISIBLE_DEVICES": ns["visible"],
        "loss_falls": ns["falls"],
        "tasks": _gpus(job),
    }


def _marks(started: float, marks: dict, first_step: float) -> dict:
    """Seconds spent in each part between user code and the first step."""
    t = [started, marks["imported"], marks["on_gpu"], marks["ddp"], first_step]
    names = ("import_s", "to_gpu_s", "ddp_s", "first_step_s")
    return {"parts": {n: round(b - a, 3) for n, a, b in zip(names, t, t[1:], strict=False)}}


def _by_hand(steps_for_s: float) -> dict:
    """The same script as one process started by hand (it imports torch itself)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(
        os.environ,
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        CUDA_VISIBLE_DEVICES="0",
    )
    out = "import json; print(json.dumps([STARTED, MARKS, FIRST_STEP, steps_per_s]))"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(f"STEPS_FOR_S = {steps_for_s}\n" + TORCH + out)
    t0 = time.time()
    got = subprocess.run([sys.executable, f.name], env=env, capture_output=True, text=True)
    os.unlink(f.name)
    if got.returncode:
        return {"error": got.stderr[-2000:]}
    started, marks, first, rate = json.loads(got.stdout.strip().splitlines()[-1])
    return {
        "start_to_user_code_s": round(started - t0, 3),
        **_marks(started, marks, first),
        "start_to_first_step_s": round(first - t0, 3),
        "steps_per_s": round(rate, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=2, help="warm PyTorch jobs after the first")
    parser.add_argument("--train-s", type=float, default=8.0, help="seconds each job trains")
    parser.add_argument("--settle-s", type=float, default=25.0, help="wait for spares between")
    args = parser.parse_args()
    query = ["--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    try:
        smi = subprocess.run(["nvidia-smi", *query], capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        smi = "no nvidia-smi"
    result: dict = {"nvidia_smi": smi, "python": sys.version.split()[0]}
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tony_jupyter")
    runs = []
    for i in range(1 + args.rounds):
        runs.append(_torch_job(ip, f"gpu-torch-{i}", args.train_s))
        print(json.dumps({"pytorch": i, **runs[-1]}), file=sys.stderr, flush=True)
        time.sleep(args.settle_s)  # the next job's spares start and import torch meanwhile
    result["pytorch"] = {"first_job": runs[0], "warm_jobs": runs[1:]}
    result["by_hand"] = _by_hand(args.train_s)
    t0 = time.time()
    job = ip.run_cell_magic(
        "tony",
        "--framework jax --workers 1 --gpus 1 --no-tensorboard --pull devices,jax_loss,visible "
        "--async --name gpu-jax",
        JAX,
    )
    job.result(timeout=600)
    ns = ip.user_ns
    result["jax"] = {
        "cell_to_result_s": round(time.time() - t0, 3),
        "devices": ns["devices"],
        "loss": ns["jax_loss"],
        "CUDA_VISIBLE_DEVICES": ns["visible"],
        "tasks": _gpus(job),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
