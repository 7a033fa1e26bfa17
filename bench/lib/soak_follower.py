"""``python -m bench.lib.soak_follower JOB_DIR``: the kernel side of a job as a notebook has it,
in its own process so its memory can be measured: ``follow`` feeding a JobView (its text form,
outside a kernel) until the job ends."""

from __future__ import annotations

import sys
from pathlib import Path

from tony_jupyter.launcher.client import JobRecord
from tony_jupyter.launcher.clients import open_client
from tony_jupyter.widgets import JobView, follow


def main() -> int:
    d = Path(sys.argv[1])
    client = open_client(JobRecord(d.name, d))
    follow(client, JobView(d.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
