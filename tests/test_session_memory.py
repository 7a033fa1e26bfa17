"""A long session in bounded memory: pushing 20 MB of names with each of five cells does not
grow the session's AM by what it was pushed (it held every cell's names: 29 -> 190 MiB)."""

import os

import psutil

from tony_jupyter import session as sessions
from tony_jupyter.launcher.client import list_jobs

BLOB = 20 << 20


def test_pushing_20_mb_per_cell_over_five_cells_keeps_the_am_flat(shell, tony_home):
    shell.run_line_magic("tony", "session start --workers 1 --no-tensorboard")
    try:
        (rec,) = list_jobs()
        am = psutil.Process(rec.read_json("am.json")["pid"])
        shell.user_ns["blob"] = os.urandom(BLOB)
        assert shell.run_cell_magic("tony", "", "len(blob)") == BLOB
        before = am.memory_info().rss
        for _ in range(5):
            shell.user_ns["blob"] = os.urandom(BLOB)  # new names each cell: pushed again
            assert shell.run_cell_magic("tony", "", "len(blob)") == BLOB
        grown_mib = (am.memory_info().rss - before) / 2**20
        assert grown_mib < 40, f"the AM grew {grown_mib:.0f} MiB over 5 cells of 20 MB"
    finally:
        shell.run_line_magic("tony", "session stop")
    assert sessions.current() is None
