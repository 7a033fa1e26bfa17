"""follow() on a real local job writing fast: every line of every task reaches the view, once
and in order, through the AM's feed (the widget itself shows a bounded tail)."""

import pytest
from helpers.jobs import wait_no_processes

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.options import parse_job_args
from tony_jupyter.widgets.follow import follow
from tony_jupyter.widgets.view import JobView

# 20,000 numbered lines per task, in bursts of 2,000 every 0.1 s (20,000 lines/s for 1 s).
CELL = """\
import os, sys, time
me = os.environ["TONY_TASK_ID"]
for burst in range(10):
    sys.stdout.write("".join(f"{me} line {burst * 2000 + i}\\n" for i in range(2000)))
    sys.stdout.flush()
    time.sleep(0.1)
"""


class Recorder(JobView):
    """A text-mode view that also keeps every line it is given, not only the bounded tail."""

    def __init__(self, job_id):
        super().__init__(job_id, mode="text")
        self.texts: dict[str, list[str]] = {}

    def _say(self, line):  # text mode prints each line: not here
        pass

    def append_log(self, task_id, text):
        self.texts.setdefault(task_id, []).append(text)
        super().append_log(task_id, text)


@pytest.mark.slow
def test_every_line_of_a_fast_writer_reaches_the_view_once_and_in_order(tony_home):
    _, spec = parse_job_args("--workers 2 --no-tensorboard")
    client = open_client(backend_local.submit(spec, make_bundle(CELL, {})))
    view = Recorder(client.job_id)
    assert follow(client, view).state == "SUCCEEDED"
    for task in ("worker:0", "worker:1"):
        lines = [x for x in "".join(view.texts[task]).splitlines() if " line " in x]
        assert lines == [f"{task} line {n}" for n in range(20000)]
        assert view.logs[task].total >= 20000  # the view counted them all, showing a tail
    client.release()
    assert client.wait_am_exit()
    assert wait_no_processes(tony_home) == []
