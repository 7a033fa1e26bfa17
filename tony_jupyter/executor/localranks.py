"""Several processes per task (``--procs-per-task N``, torchrun's ``--nproc-per-node``): the
executor is local rank 0 and starts ranks 1..N-1 as processes of this module, each with its own
``LOCAL_RANK``/``RANK`` (frameworkenv.pytorch_env). They run the same cell; their output goes to
the executor's captured stdout (the fds are inherited); the chief's value comes from local
rank 0. The task fails if any local rank fails; what outlives the executor is reaped (reaper).

The ranks are ``supervise.start(own_group=False)``: they stay in the executor's process group,
which is the task's (the provider stops the task by its group, the reaper finds what is left
in it), so they are never stopped one by one here: only waited for."""

from __future__ import annotations

import atexit
import os
import sys
import traceback
from pathlib import Path

from ..core import supervise
from ..core.protocol import ExecutorEnv


def start(procs: int, env_for) -> list[supervise.Process]:
    """Local ranks 1..procs-1; ``env_for(local_rank)`` is each one's framework environment."""
    return [
        supervise.start(
            [sys.executable, "-m", "tony_jupyter.executor.localranks"],
            env=dict(os.environ, **env_for(i)),
            own_group=False,  # the task's group (see above)
        )
        for i in range(1, procs)
    ]


def wait(procs: list[supervise.Process]) -> str | None:
    """Waits for every local rank; what went wrong, if anything did."""
    failed = [(i + 1, p.wait()) for i, p in enumerate(procs)]
    bad = [f"local rank {i} exited with code {code}" for i, code in failed if code != 0]
    return "; ".join(bad) or None


def main() -> None:
    from .cell import exit_code, run_user_code

    code = 0
    try:
        run_user_code(Path(os.environ[ExecutorEnv.var("bundle_dir")]), is_chief=False)
    except SystemExit as e:
        code = exit_code(e)
    except BaseException:  # noqa: BLE001 - reported in the task's log; the exit code tells
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    main()
