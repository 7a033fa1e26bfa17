"""A job YARN cannot place: refused before submission when its total ask can never fit (see
test_yarn_backend's bad inputs), FAILED with the reason when its containers are not allocated in
time because other applications hold the queue."""

import time
import uuid

import pytest

from tony_jupyter.errors import JobFailedError
from tony_jupyter_devcluster.config import NM_VCORES

pytestmark = pytest.mark.yarn
RUN = uuid.uuid4().hex[:6]


def test_containers_never_allocated_end_failed_with_the_reason(shell, tony_home, cluster):
    hog = shell.run_cell_magic(
        "tony",
        # AM (1 vcore) + one worker holding all but two of the default partition's vcores.
        f"--workers 1 --vcores {NM_VCORES - 2} --async --name hog-{RUN}",
        "import time\ntime.sleep(600)",
    )
    try:
        deadline = time.monotonic() + 120
        while hog.client.snapshot().state != "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # The hog holds all but one of the default partition's vcores; this job's AM takes the
        # last one and its worker never gets a container.
        started = time.monotonic()
        with pytest.raises(JobFailedError) as e:
            shell.run_cell_magic(
                "tony",
                f"--workers 1 --name starved-{RUN} --conf tony.task.registration-timeout-sec=10",
                "1",
            )
        assert e.value.state == "FAILED"
        assert "YARN allocated no container for worker:0 within 10 s" in e.value.reason
        assert "queue 'default' has no room" in e.value.reason
        assert time.monotonic() - started < 90  # ended, not hanging
    finally:
        hog.kill()
