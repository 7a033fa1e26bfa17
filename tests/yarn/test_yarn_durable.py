"""Durable before reported, on YARN: right after ``result()`` returns, the job's history entry
is on HDFS, so another TONY_JUPYTER_HOME (another host) lists it and reads its logs at once;
the local module's test, with the reader's home overridden."""

import getpass
import json
import os

import pytest
from test_durable import test_an_ended_job_is_listed_and_its_logs_read_from_another_process_at_once

from tony_jupyter.launcher.yarn import secure
from tony_jupyter.launcher.yarn.hdfsjobs import history_root

pytestmark = pytest.mark.yarn

__all__ = ["test_an_ended_job_is_listed_and_its_logs_read_from_another_process_at_once"]


@pytest.fixture
def reader_env(tony_home, tmp_path):
    return {**os.environ, "TONY_JUPYTER_HOME": str(tmp_path / "another-home")}


@pytest.fixture
def kept_entry():
    def read(rec):
        client = secure.connect().staging.client
        with client.read(f"{history_root(getpass.getuser())}/{rec.id}/history.json") as f:
            return json.loads(f.read())

    return read
