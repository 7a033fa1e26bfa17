"""A hung rank named, for real: two workers step together through a collective until rank 1
sleeps before one; every task still heartbeats, no new step comes, and the AM marks the job
stalled within its threshold with both ranks' stacks attached (rank 1 in its sleep, rank 0 in
the collective): PyTorch over gloo, TensorFlow's MultiWorkerMirroredStrategy, JAX. Then
tony.stall.action's kill and restart act."""

import time

import pytest
from helpers.jobs import FAST, running, submit, wait_for
from IPython.core.error import UsageError

from tony_jupyter.core.stackgroups import group

pytestmark = pytest.mark.slow

# Rank 1 sleeps before step 6 (its last report: step 5); rank 0 reports step 6 and waits in
# that step's collective. Steps come every ~0.2-0.4 s: the limit is the floor, 2 s.
STALL = (
    f"--workers 2 --memory 1g --no-tensorboard {FAST} --conf tony.stall.factor=3 "
    "--conf tony.stall.floor-sec=2 --conf tony.stall.ceiling-sec=30"
)
LOOP = """
def wait_here():
    time.sleep(600)

for step in range(1, 100000):
    if rank == 1 and step == 6:
        wait_here()
    tony_jupyter.report(step=step)
    collective()
    time.sleep(0.2)
"""
PYTORCH = (
    """
import time, torch, torch.distributed as dist, tony_jupyter
dist.init_process_group("gloo")
rank = dist.get_rank()

def collective():
    dist.all_reduce(torch.ones(1))
"""
    + LOOP
)
TENSORFLOW = (
    """
import time, tensorflow as tf, tony_jupyter
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id

@tf.function
def collective():
    one = strategy.run(lambda: tf.constant(1.0))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, one, axis=None)
"""
    + LOOP
)
JAX = (
    """
import time, jax, jax.numpy as jnp, tony_jupyter
from jax.experimental import multihost_utils
jax.distributed.initialize()
rank = jax.process_index()

def collective():
    multihost_utils.process_allgather(jnp.array([1.0]))
"""
    + LOOP
)
# What rank 0's stack shows while it waits in the collective (a tf.function runs as a graph:
# no Python frame of its own, TensorFlow's execute under the cell's call)
IN_COLLECTIVE = {
    "pytorch": ("distributed_c10d.py", "in collective"),
    "tensorflow": ("tensorflow/python/eager/execute.py", "in quick_execute"),
    "jax": ("multihost_utils.py", "in collective"),
}
CELLS = {"pytorch": PYTORCH, "tensorflow": TENSORFLOW, "jax": JAX}


def stalled(client, timeout: float = 180):
    """The job's snapshot once it is marked stalled and its stacks are attached."""
    return wait_for(
        lambda: (s := client.snapshot()).stall is not None and s.stall.stacks and s,
        timeout,
        "the job marked stalled, with its stacks",
    )


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax"])
def test_a_rank_that_sleeps_before_its_collective_is_named_with_every_ranks_stack(
    framework, tony_home, shell, capsys
):
    pytest.importorskip({"pytorch": "torch"}.get(framework, framework))
    client = submit(f"--framework {framework} {STALL}", CELLS[framework], {})
    with running(client.record, tony_home, timeout=120) as job:
        snap = stalled(job)
        st = snap.stall
        assert snap.state == "RUNNING" and st.action == "warn"  # warn: the job goes on
        assert 2.0 <= st.threshold_s <= 30.0  # 3 x the median step interval: the floor, 2 s,
        # unless a loaded machine spaced the steps out
        # marked within the threshold of the last step (plus the AM's 0.2 s tick)
        assert st.threshold_s < st.marked - st.since <= st.threshold_s + 1.0
        assert st.behind == ("worker:1",)
        assert st.steps == {"worker:0": "step 6", "worker:1": "step 5"}
        stacks = {s.task: s for s in st.stacks}
        assert set(stacks) == {"worker:0", "worker:1"}
        assert "in wait_here" in stacks["worker:1"].text
        rank0 = stacks["worker:0"].text
        assert all(frame in rank0 for frame in IN_COLLECTIVE[framework]), rank0
        assert "in wait_here" not in rank0
        groups = group(st.stacks)  # two groups of one: the ranks differ
        assert sorted(g.tasks for g in groups) == [("worker:0",), ("worker:1",)]
        print(
            f"\n{framework}: marked {st.marked - st.since:.2f} s after the last step "
            f"(limit {st.threshold_s:g} s); dumps "
            + ", ".join(f"{s.task} {s.seconds:.3f} s" for s in st.stacks)
        )
        # On demand too, while it stays stalled: the same stacks, each within a heartbeat
        t0 = time.monotonic()
        answer = job.stacks()
        took = time.monotonic() - t0
        assert answer is not None and not answer.missing
        assert "in wait_here" in next(s.text for s in answer.tasks if s.task == "worker:1")
        print(f"{framework}: `stacks` answered in {took:.2f} s")
        # %tony stacks (and tony-jupyter stacks: the same text): grouped, rank 1 marked
        capsys.readouterr()
        shell.run_line_magic("tony", f"stacks {job.job_id}")
        text = capsys.readouterr().out
        assert "2 task(s) in 2 group(s) of the same stacks" in text
        assert ">>> worker:1 (furthest behind)" in text and "in wait_here" in text
        shell.run_line_magic("tony", f"status {job.job_id}")
        assert "stalled since " in capsys.readouterr().out
        with pytest.raises(UsageError, match="has no task 'worker:7'"):
            shell.run_line_magic("tony", f"stacks {job.job_id} worker:7")
    shell.run_line_magic("tony", f"stacks {job.job_id}")  # the job was killed at the end
    assert "has ended (KILLED): no task runs to take stacks of" in capsys.readouterr().out


def test_a_stalled_job_is_killed_when_the_setting_says_kill(tony_home):
    pytest.importorskip("torch")
    client = submit(f"--framework pytorch {STALL} --conf tony.stall.action=kill", PYTORCH, {})
    with running(client.record, tony_home, timeout=120) as job:
        snap = wait_for(lambda: (s := job.snapshot()).terminal and s, 180, "the job's end")
        assert snap.state == "KILLED" and "stalled: no task reported a new step" in snap.reason
        assert snap.stall is not None and len(snap.stall.stacks) == 2  # gathered first


def test_a_stalled_attempt_is_restarted_when_the_setting_says_restart(tony_home):
    pytest.importorskip("torch")
    line = f"--framework pytorch {STALL} --conf tony.stall.action=restart --max-attempts 2"
    client = submit(line, PYTORCH, {})
    with running(client.record, tony_home, timeout=120) as job:
        snap = wait_for(
            lambda: (s := job.snapshot()).attempt == 2 and s.state == "RUNNING" and s,
            180,
            "attempt 2 running",
        )
        (first,) = snap.attempts
        assert "stalled" in first.reason and first.task == "worker:1"
        # the second attempt stalls as the first did, and with no attempt left the job fails
        end = wait_for(lambda: (s := job.snapshot()).terminal and s, 180, "the job's end")
        assert end.state == "FAILED" and "stalled" in end.reason


@pytest.mark.parametrize("backend", [pytest.param("yarn", marks=pytest.mark.yarn)], indirect=True)
def test_on_yarn_each_containers_sidecar_dumps_its_task_for_the_stall(backend, tony_home):
    pytest.importorskip("torch")
    client = submit(f"--framework pytorch {STALL}", PYTORCH, {})
    with running(client.record, tony_home, timeout=180) as job:
        st = stalled(job).stall
        assert st.behind == ("worker:1",) and st.threshold_s < st.marked - st.since
        stacks = {s.task: s for s in st.stacks}
        assert "in wait_here" in stacks["worker:1"].text
        assert all(f in stacks["worker:0"].text for f in IN_COLLECTIVE["pytorch"])
        # each from its own container, on the host YARN put it on
        assert all(s.host and not s.error for s in st.stacks)
        assert sorted(g.tasks for g in group(st.stacks)) == [("worker:0",), ("worker:1",)]
        print("\nyarn: dumps " + ", ".join(f"{s.task} {s.seconds:.3f} s" for s in st.stacks))
