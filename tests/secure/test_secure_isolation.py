"""One user's jobs are closed to the others: bob, with his own Kerberos ticket, against alice's
running job. He cannot read its details from the RM, kill it, read its staging directory or
checkpoints on HDFS, or call its AM; the Jupyter server extension shows each user only their
own jobs."""

from __future__ import annotations

import asyncio
import time

import pytest
import requests
from helpers.secure import as_user

from tony_jupyter.commands import stacks_text
from tony_jupyter.core.errors import BackendError, JobNotFoundError
from tony_jupyter.core.hadoopconf import HadoopConf
from tony_jupyter.core.kerberos import Login
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.yarn.rm import RMClient
from tony_jupyter.server_ext.jobs import ServerJobs, kerberos_user

pytestmark = [pytest.mark.yarn, pytest.mark.secure]

SLEEPER = "import time\ntime.sleep(600)\n"


@pytest.fixture
def alices_job(shell, tony_home, secure):
    job = shell.run_cell_magic("tony", "--workers 1 --async", SLEEPER)
    try:
        deadline = time.monotonic() + 150
        while not job.client.snapshot().endpoints.get("tensorboard"):  # running, TB up
            assert time.monotonic() < deadline, "alice's job never ran with its TensorBoard"
            time.sleep(0.5)
        yield job
    finally:
        job.kill()


def test_bob_is_shut_out_of_alices_job(alices_job, secure, secure_cluster, monkeypatch):
    app_id = alices_job.job_id
    (rec,) = list_jobs()
    info = rec.read_json("yarn.json")
    am_url = info["am_url"]
    assert secure.app(app_id)["amRPCAddress"]  # alice sees where her AM is

    # The RM's view ACL: bob sees that the application exists, not its details.
    seen = secure.app(app_id, as_user="bob")
    assert seen["user"] == "alice"
    for detail in ("amRPCAddress", "amContainerLogs", "amHostHttpAddress"):
        assert not seen.get(detail), (detail, seen.get(detail))

    # The RM's modify ACL: bob's kill is refused, and the job runs on.
    as_user(monkeypatch, secure_cluster, "bob")
    bob_rm = RMClient(HadoopConf.load().rm, "bob", auth=Login.from_env().auth())
    with pytest.raises(BackendError, match="403"):
        bob_rm.kill(app_id, timeout=10)
    assert secure.app(app_id)["state"] == "RUNNING"

    # HDFS permissions: the staging directory and the checkpoints under it are alice's only.
    for path in (info["staging"], info["staging"] + "/checkpoints", info["staging"] + "/token"):
        r = secure.bob.get(
            f"{secure.webhdfs}/webhdfs/v1{path}", params={"op": "LISTSTATUS"}, timeout=10
        )
        assert r.status_code == 403 and "Permission denied: user=bob" in r.text, r.text

    # The AM's API takes only the job's token (or a task's); bob has neither.
    for headers in ({}, {"Authorization": "Bearer not-the-job-token"}):
        r = requests.get(f"{am_url}/api/v1/job", headers=headers, timeout=10)
        assert r.status_code in (401, 403), r.status_code
    assert alices_job.client.snapshot().state == "RUNNING"


def test_bob_cannot_take_the_stacks_of_alices_job(
    alices_job, secure_cluster, monkeypatch, tmp_path
):
    app_id = alices_job.job_id
    (rec,) = list_jobs()
    am_url = rec.read_json("yarn.json")["am_url"]
    # alice, with the job's token, gets her worker's stacks (the cell's sleep, line 2)
    theirs = stacks_text(app_id)
    assert 'worker:0\n  thread 1:\n    File "<tony-cell>", line 2' in theirs, theirs

    # The AM's stacks route takes only the job's token: without it, nothing.
    for headers in ({}, {"Authorization": "Bearer not-the-job-token"}):
        r = requests.get(f"{am_url}/api/v1/stacks", headers=headers, timeout=10)
        assert r.status_code in (401, 403), r.status_code
        assert "tony-cell" not in r.text

    # bob, with his own ticket and jobs home, asks for them by the application id: the job is
    # not his to open (its history and staging on HDFS are alice's only).
    as_user(monkeypatch, secure_cluster, "bob")
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "bob"))
    with pytest.raises(JobNotFoundError) as e:
        stacks_text(app_id)
    assert str(e.value).startswith(f"{app_id} is alice's job, not bob's: only its owner can")
    assert list((tmp_path / "bob").rglob("token")) == []  # nothing of alice's came to bob
    assert alices_job.client.snapshot().state == "RUNNING"


def test_bob_cannot_reach_alices_tensorboard(alices_job, secure):
    app_id = alices_job.job_id
    # Straight to the port on the node: the guard wants the job's key.
    url = alices_job.client.snapshot().endpoints["tensorboard"]
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "<html" not in r.text.lower(), r.text[:300]
    # Through the RM's web proxy (past its "not yours" warning page): the proxy forwards
    # bob's request with proxy-user=bob, which the guard refuses; alice's gets through.
    proxy = f"{secure.rm}/proxy/{app_id}/"
    warned = {f"checked_{app_id}": "true"}
    deadline = time.monotonic() + 60
    while (mine := secure.alice.get(proxy, cookies=warned, timeout=10)).status_code != 200:
        assert time.monotonic() < deadline, (mine.status_code, mine.text[:300])
        time.sleep(1)  # the tracking URL reaches the RM with the AM's next allocate
    assert "<html" in mine.text.lower() and "tensorboard" in mine.text.lower(), mine.text[:300]
    # What the Jupyter server's /tony/proxy does: the endpoint's key from the AM (job token).
    got = asyncio.run(ServerJobs(user="alice").endpoint(app_id, "tensorboard"))
    assert got is not None and got.url == url
    page = requests.get(got.url, headers={"Authorization": f"Bearer {got.key}"}, timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()
    theirs = secure.bob.get(proxy, cookies=warned, timeout=10)
    assert theirs.status_code == 403, (theirs.status_code, theirs.text[:300])
    assert "not the owner" in theirs.text


def test_server_extension_lists_only_the_users_own_jobs(
    shell, tony_home, secure_cluster, monkeypatch
):
    one_shot = "--workers 1 --no-tensorboard"
    shell.run_cell_magic("tony", one_shot, "1\n")  # alice's
    as_user(monkeypatch, secure_cluster, "bob")
    shell.run_cell_magic("tony", one_shot, "2\n")  # bob's, in the same jobs home
    ids = {r.id: r.read_json("yarn.json")["user"] for r in list_jobs()}
    assert sorted(ids.values()) == ["alice", "bob"]

    for user in ("bob", "alice"):
        as_user(monkeypatch, secure_cluster, user)
        assert kerberos_user() == user
        jobs = ServerJobs(user=kerberos_user())
        shown = asyncio.run(jobs.summaries())
        # The list also has the user's jobs from the RM and the history (other tests'): of
        # this test's two, only the user's own.
        assert [ids[row["job_id"]] for row in shown if row["job_id"] in ids] == [user]
        other = next(i for i, u in ids.items() if u != user)
        with pytest.raises(Exception, match="404"):
            jobs.client(other)
