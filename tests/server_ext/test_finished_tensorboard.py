"""TensorBoard for a job that has ended: the proxy starts one on demand from the event files in
the job's history (locally its directory's tensorboard/), behind the same guard, shows the
chief's scalars, and stops it when idle."""

import requests
from helpers.jobs import fetch_json, submit, wait_no_processes
from helpers.server import status

from tony_jupyter.server_ext.jobs import ServerJobs

pytest_plugins = ["pytest_jupyter.jupyter_server"]

CELL = """
import tony_jupyter
for step in range(1, 6):
    tony_jupyter.report(step=step, loss=1.0 / step, total_steps=5)
"""


async def test_a_finished_jobs_tensorboard_shows_its_scalars_and_stops_when_idle(
    jp_fetch, jp_serverapp, tony_home
):
    client = submit("--workers 1", CELL, {})
    client.release()
    assert client.wait_am_exit(120) and client.snapshot().state == "SUCCEEDED"
    job = client.job_id
    assert client.endpoint("tensorboard") is None  # the chief's went with the job

    tags = await fetch_json(
        jp_fetch, "tony", "proxy", job, "tensorboard", "data", "plugin", "scalars", "tags"
    )
    assert "step_loss" in tags["train"]
    scalars = await fetch_json(
        jp_fetch,
        "tony",
        "proxy",
        job,
        "tensorboard",
        "data",
        "plugin",
        "scalars",
        "scalars",
        params={"run": "train", "tag": "step_loss"},
    )
    assert [round(v, 3) for _, step, v in scalars] == [1.0, 0.5, 0.333, 0.25, 0.2]

    jobs: ServerJobs = jp_serverapp.web_app.settings["tony_jupyter.jobs"]
    board = jobs.boards.boards[job]
    assert requests.get(board.url + "data/runs", timeout=5).status_code == 403  # its guard
    jobs.boards.idle_seconds = 0
    assert jobs.boards.reap() == [job] and board.proc.poll() is not None
    assert wait_no_processes(tony_home) == []


async def test_no_tensorboard_for_a_finished_job_without_event_files(jp_fetch, tony_home):
    client = submit("--workers 1 --no-tensorboard", "1", {})
    client.release()
    assert client.wait_am_exit(120)
    assert await status(jp_fetch, "tony", "proxy", client.job_id, "tensorboard", "x") == 404
    assert wait_no_processes(tony_home) == []
