"""An elastic PyTorch job's task (``--workers MIN:MAX``): the executor runs the cell's
process(es) under PyTorch's own elastic agent (``torch.distributed.launcher``, what torchrun
runs), with a c10d rendezvous hosted by worker:0's agent on the address worker:0 registered.

The agent gives each process torchrun's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``...) for each rendezvous round: when a worker is lost, the others' processes
are restarted by their agents (up to ``ELASTIC_MAX_RESTARTS`` times) and meet again, with the
replacement the AM launches (am/elastic.py) once it joins. The cell must read its rank and
world size from the environment (``init_process_group()`` with no arguments) and resume from
``checkpoint_dir()``. The value and ``--pull`` names come from rank 0 of the last round.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
from pathlib import Path

from torch.distributed.elastic.multiprocessing.errors import record

from ..core.frameworks import ELASTIC_MAX_RESTARTS, RENDEZVOUS_TASK
from ..core.protocol import CellOutcome, ExecutorEnv

# Where local rank 0 leaves its report()s for the executor, whose heartbeats carry them.
PROGRESS_VAR = "TONY_RANK_PROGRESS"
PROGRESS_PERIOD_S = 0.5
# Once MIN agents have joined, how long the rendezvous waits for more (up to MAX) before
# training starts (c10d's last_call_timeout; its default, 30 s, would delay every restart).
LAST_CALL_S = 5


@record  # the agent's ChildFailedError then carries the cell's traceback
def rank_main(bundle_dir: str) -> CellOutcome:
    """One process of the cell, started by the agent (spawned: a fresh interpreter)."""
    from .cell import enter_src, run_user_code

    master = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    # TonY's names for what the agent set, for this round
    os.environ.update(INIT_METHOD=f"tcp://{master}", WORLD=os.environ["WORLD_SIZE"])
    src = enter_src(Path(bundle_dir))
    if os.environ.get("LOCAL_RANK") == "0":
        threading.Thread(
            target=_hand_progress, args=(Path(os.environ[PROGRESS_VAR]),), daemon=True
        ).start()
    from . import checkpoints

    rank0 = os.environ["RANK"] == "0"
    mirror = checkpoints.for_round(rank0) if os.environ.get("LOCAL_RANK") == "0" else None
    try:
        outcome = run_user_code(Path(bundle_dir), is_chief=rank0, src=src)
    except BaseException:
        traceback.print_exc()  # into the task's log; the agent restarts or gives up
        raise
    if mirror is not None:
        mirror.close()  # the last save reaches HDFS before this round's rank 0 reports
    return outcome


def _hand_progress(path: Path) -> None:
    """In local rank 0: its latest progress, to a file the executor reads."""
    from .. import runtime

    last: dict = {}
    while True:
        now = runtime.current_progress()
        if now != last:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(now))
            tmp.replace(path)
            last = now
        time.sleep(PROGRESS_PERIOD_S)


def _take_progress(path: Path) -> None:
    """In the executor: local rank 0's progress, into this process's (the heartbeats')."""
    from .. import runtime

    seen = 0.0
    while True:
        try:
            mtime = path.stat().st_mtime
            if mtime != seen:
                seen = mtime
                runtime.merge_progress(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass  # not written yet, or replaced while read: the next look finds it
        time.sleep(PROGRESS_PERIOD_S)


def run(env: ExecutorEnv, cluster_spec: dict[str, list[str]], host: str) -> CellOutcome:
    """Run the cell under the elastic agent; the outcome of this task's first process (with the
    value, if it was rank 0)."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousClosedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    endpoint = cluster_spec["worker"][0]  # worker:0's registered address
    # The agents' shared TCPStore keeps rank 0's MASTER_ADDR of the first round only: a worker
    # that joins later (a replacement) then waits for a key no one writes (torch 2.15). Without
    # sharing, rank 0 of every round publishes its own.
    os.environ["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    progress = Path(env.bundle_dir).resolve() / f"progress-{env.task_id.replace(':', '-')}.json"
    os.environ[PROGRESS_VAR] = str(progress)
    threading.Thread(target=_take_progress, args=(progress,), daemon=True).start()
    config = LaunchConfig(
        min_nodes=env.min_workers,
        max_nodes=env.max_workers,
        nproc_per_node=env.procs_per_task,
        run_id=env.job_id or "tony",
        role="worker",
        rdzv_endpoint=endpoint,
        rdzv_backend="c10d",
        rdzv_configs={
            "is_host": env.task_id == RENDEZVOUS_TASK,
            "last_call_timeout": LAST_CALL_S,
        },
        max_restarts=ELASTIC_MAX_RESTARTS,
        monitor_interval=0.5,
        start_method="spawn",
        local_addr=host,
    )
    print(
        f"[tony] {env.task_id}: elastic agent, {env.min_workers}:{env.max_workers} workers, "
        f"c10d rendezvous at {endpoint}",
        flush=True,
    )
    try:
        results = elastic_launch(config, rank_main)(env.bundle_dir)
    except RendezvousClosedError:
        # The others finished before this (replacement) worker could join: nothing to do.
        print(f"[tony] {env.task_id}: the rendezvous had closed; the work is done", flush=True)
        return CellOutcome("ok")
    except ChildFailedError as e:
        raise RuntimeError(f"the cell failed under PyTorch's elastic agent:\n{e}") from None
    # {global rank: outcome} of this task's processes in the last round; rank 0's has the value
    outcomes = sorted(results.items())
    return outcomes[0][1] if outcomes else CellOutcome("ok")
