"""A task's own token, as the code a task runs can find it (it is that task's: the user's code
acts for its own task), for tests that act as an executor: a cell prints it, a test reads it
from the task's log."""

from __future__ import annotations

import time

# The executor's link is in the task's own process; its token acts for that task only.
PRINT_OWN_TOKEN = (
    "import gc\n"
    "from tony_jupyter.executor.link import AMLink\n"
    "_link = next(o for o in gc.get_objects() if isinstance(o, AMLink))\n"
    "print('own-token', _link.token, flush=True)\n"
    "del _link\n"
)


def own_token(job, task: str = "worker:0", timeout: float = 30) -> str:
    """``task``'s own token, from its log (its cell starts with :data:`PRINT_OWN_TOKEN`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = job.logs(task)[0]
        if "own-token " in text:
            return text.split("own-token ", 1)[1].split()[0]
        time.sleep(0.1)
    raise AssertionError(f"{task} printed no token within {timeout} s")
