"""Secrets at rest (issue 28, finding 6): the values of a job's variables (``--conf
tony.containers.envs``) reach its tasks, but not its spec, its history or any API, which name
them only; the values wait for the AM in a file of mode 600 that the job's record does not keep.
The local backend end to end; the YARN history entry: tests/yarn/test_yarn_history.py."""

import json
import stat

import pytest
from helpers.jobs import FAST, fetch_json

from tony_jupyter.core.jobdir import JobDir
from tony_jupyter.core.spec import JobSpec, SpecError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client

pytest_plugins = ["pytest_jupyter.jupyter_server"]

SECRET = "s3cret-8f1d2c"  # in no file the job leaves, in no answer of the server


def spec_with_secret():
    from tony_jupyter.options import parse_job_args

    _, spec = parse_job_args(f"--workers 2 --conf tony.containers.envs=API_KEY={SECRET},B=1")
    return spec


def test_the_spec_names_its_variables_and_their_values_stay_apart(tmp_path):
    spec = spec_with_secret()
    text = spec.to_json()
    assert SECRET not in text and "API_KEY" in json.loads(text)["env"]
    assert json.loads(spec.env_json())["API_KEY"] == SECRET
    (tmp_path / "spec.json").write_text(text)
    JobDir(tmp_path).env.write_text(spec.env_json())
    assert JobSpec.read(tmp_path) == spec  # the AM's spec: values and all
    assert dict(JobSpec.from_json(text).env) == {}  # read to be shown: no value to show


@pytest.mark.parametrize(
    "values,message",
    [
        (None, "has no value for API_KEY, B, which the job's spec names"),
        ('{"B": "1"}', "has no value for API_KEY, which the job's spec names"),
        ('["API_KEY"]', "is not a JSON object of variables"),
    ],
)
def test_an_am_without_the_values_says_so(tmp_path, values, message):
    (tmp_path / "spec.json").write_text(spec_with_secret().to_json())
    if values is not None:
        JobDir(tmp_path).env.write_text(values)
    with pytest.raises(SpecError, match=message):
        JobSpec.read(tmp_path)


async def test_a_local_jobs_variables_reach_its_tasks_and_no_record_or_api(
    shell, tony_home, jp_fetch
):
    cell = "import os\nos.environ['API_KEY']"
    line = f"--workers 2 --name secrets {FAST} --conf tony.containers.envs=API_KEY={SECRET}"
    assert shell.run_cell_magic("tony", line, cell) == SECRET
    (rec,) = list_jobs()
    assert open_client(rec).wait_am_exit()  # the AM has written the history and left
    assert not rec.layout.env.exists()  # the record keeps the names only
    files = [p for p in rec.dir.rglob("*") if p.is_file()]
    assert len(files) > 5
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    assert json.loads((rec.dir / "spec.json").read_text())["env"] == ["API_KEY"]
    assert json.loads((rec.dir / "history.json").read_text())["spec"]["env"] == ["API_KEY"]
    detail = await fetch_json(jp_fetch, "tony", "api", "jobs", rec.id, "detail")
    assert detail["spec"]["env"] == ["API_KEY"] and SECRET not in json.dumps(detail)
    listing = await fetch_json(jp_fetch, "tony", "api", "jobs")
    assert SECRET not in json.dumps(listing)


def test_a_running_jobs_values_are_the_users_only(shell, tony_home):
    """While the job runs, the values' file is its user's alone (mode 600)."""
    from tony_jupyter.core.bundle import make_bundle
    from tony_jupyter.launcher import local as backend_local
    from tony_jupyter.options import parse_job_args

    _, spec = parse_job_args(f"--workers 1 --no-tensorboard --conf tony.containers.envs=K={SECRET}")
    client = open_client(backend_local.submit(spec, make_bundle("import time\ntime.sleep(60)", {})))
    try:
        mode = stat.S_IMODE(client.record.layout.env.stat().st_mode)
        assert mode == 0o600, oct(mode)
    finally:
        client.kill()
        client.release()
        assert client.wait_am_exit()
