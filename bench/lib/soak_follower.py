"""``python -m bench.lib.soak_follower JOB_DIR``: the kernel side of a job as a notebook has it,
in its own process so its memory can be measured: ``follow`` feeding a JobView (its text form,
outside a kernel) until the job ends."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import requests

from tony_jupyter.launcher.client import JobRecord
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.widgets import JobView, follow


def main() -> int:
    d = Path(sys.argv[1])
    client = open_client(JobRecord(d.name, d))
    view = JobView(d.name)
    while True:  # as the widget's follower, it goes on after an AM too busy to answer in time
        try:
            if follow(client, view).terminal:
                return 0
        except requests.RequestException as e:
            print(f"follower: {e}; following again", file=sys.stderr)
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
