"""A task that cannot reach its AM says so at once, on stderr (which YARN hands the AM with the
exit code): which task, on which host, could not reach which address and port. A real executor
process, told of an AM port nothing listens on."""

import os
import socket
import subprocess
import sys

from tony_jupyter.core.protocol import ExecutorEnv
from tony_jupyter.executor.main import UNREACHABLE


def test_an_unreachable_am_is_named_with_the_host_and_port(tmp_path):
    with socket.socket() as s:  # a port that was free a moment ago: refused now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = ExecutorEnv(
        am_url=f"http://127.0.0.1:{port}",
        token="x" * 32,
        task_id="worker:1",
        attempt=1,
        bundle_dir=str(tmp_path),
        executor_host="localhost",  # resolved from /etc/hosts: no lookup leaves the machine
    ).to_env()
    res = subprocess.run(
        [sys.executable, "-m", "tony_jupyter.executor"],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == UNREACHABLE, res.stderr
    assert f"worker:1 on host localhost cannot reach the job's AM at 127.0.0.1:{port}" in res.stderr
    assert "Connection refused" in res.stderr and "Traceback" not in res.stderr
