"""PyTorch DDP trained for real through %%tony --framework pytorch: gloo on two workers, on the
local backend and on the devcluster (the same test, the ``backend`` fixture's two params)."""

import pytest
from helpers.cells import DDP, HANG_WORKER_1
from helpers.jobs import wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

torch = pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[test]'")

pytestmark = pytest.mark.slow


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


@pytest.mark.usefixtures("backend")
def test_ddp_with_gloo_on_two_workers_trains_and_keeps_replicas_equal(digits, tony_home):
    last = digits.run_cell_magic(
        "tony",
        "--framework pytorch --workers 2 --memory 1g --pull losses,equal,ranks,state",
        DDP,
    )
    losses, ns = digits.user_ns["losses"], digits.user_ns
    assert last == losses[-1]
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 * 0.6  # the loss falls
    assert ns["equal"] is True  # DDP kept both replicas' parameters identical
    assert ns["ranks"] == [0, 2, 0, 2]  # worker:0 is rank 0 of 2; TonY's WORLD agrees
    state = ns["state"]  # a state_dict comes back as tensors
    assert set(state) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert isinstance(state["0.weight"], torch.Tensor) and state["0.weight"].shape == (32, 64)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    model.load_state_dict(state)  # and loads into the same model in the notebook
    (rec,) = list_jobs()
    client = open_client(rec)
    snap = client.snapshot()
    assert snap.state == "SUCCEEDED"
    progress = snap.task("worker:0").progress  # tony_jupyter.report() reached the task table
    assert progress["step"] == 60 and progress["total_steps"] == 60
    assert progress["loss"] == pytest.approx(losses[-1])
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_a_pytorch_session_keeps_its_process_group_across_cells(shell, tony_home):
    shell.run_line_magic("tony", "session start --framework pytorch --workers 2 --no-tensorboard")
    try:
        init = "import torch, torch.distributed as dist\ndist.init_process_group('gloo')\n"
        assert shell.run_cell_magic("tony", "", init + "dist.get_world_size()") == 2
        # the next cell finds the process group the first one made, and all-reduces over it
        reduce = "t = torch.tensor([dist.get_rank() + 1.0])\ndist.all_reduce(t)\nt.item()"
        assert shell.run_cell_magic("tony", "", reduce) == 3.0
        assert shell.run_cell_magic("tony", "", "dist.is_initialized()") is True
    finally:
        shell.run_line_magic("tony", "session stop")
    assert wait_no_processes(tony_home) == []


def test_a_rendezvous_that_does_not_complete_names_the_missing_task(shell, tony_home):
    """Rank 0's address (MASTER_ADDR) is known once every task has registered: a task that
    never does fails the job in time, by name, instead of rank 0 waiting in init_process_group."""
    hang = tony_home.parent / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(HANG_WORKER_1)
    cell = "import torch.distributed as dist\ndist.init_process_group('gloo')\n"
    with pytest.raises(JobFailedError, match="worker:1 did not register within 2 s"):
        shell.run_cell_magic(
            "tony",
            "--framework pytorch --workers 2 --conf tony.task.registration-timeout-sec=2 "
            f"--conf tony.containers.envs=PYTHONPATH={hang}",
            cell,
        )
    assert wait_no_processes(tony_home) == []


def test_several_processes_per_task_each_get_their_local_rank(shell, tony_home):
    """--procs-per-task 2 on 2 CPU workers: 4 ranks, as torchrun --nproc-per-node 2 gives."""
    cell = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
print(f"rank {os.environ['RANK']} local {os.environ['LOCAL_RANK']} sum {t.item()}")
dist.destroy_process_group()
(int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"]), t.item())
"""
    got = shell.run_cell_magic(
        "tony", "--framework pytorch --workers 2 --procs-per-task 2 --no-tensorboard", cell
    )
    assert got == (0, 0, 4, 6.0)  # rank 0 of 4; the ranks 0+1+2+3 all-reduced
    (rec,) = list_jobs()
    log, _ = open_client(rec).logs("worker:1")
    assert "rank 2 local 0 sum 6.0" in log and "rank 3 local 1 sum 6.0" in log
    assert wait_no_processes(tony_home) == []
