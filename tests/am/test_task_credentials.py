"""No secret a task can take acts beyond that task (issue 28, finding 1), on the local backend
(127.0.0.1 only): the job's token is in no file of the job's directory and in no process's
environment; what a sibling reads in a task's ``/proc/<pid>/environ`` is a spent registration
secret, and presenting it revokes the token it bought."""

import psutil
import pytest
import requests
from helpers.jobs import running
from helpers.tokens import PRINT_OWN_TOKEN, own_token

from tony_jupyter.am.task_credentials import SecretReused, TaskCredentials
from tony_jupyter.core import warmproc as warm
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import Beat, HeartbeatAnswer, token_verifier
from tony_jupyter.executor.link import AMLink, BeatStream
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.options import parse_job_args

CELL = PRINT_OWN_TOKEN + (
    "import os, pathlib, time\n"
    "print('bundle token', (pathlib.Path(os.environ['TONY_BUNDLE_DIR']) / 'token').exists(),"
    " flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def job(tony_home, monkeypatch):
    # Fresh executor processes, whose launch environment is in /proc/<pid>/environ (a spare's
    # is what it started with: the task's is handed to it through a pipe).
    monkeypatch.setenv(warm.SWITCH, "0")
    _, spec = parse_job_args("--workers 2 --no-tensorboard")
    with running(
        backend_local.submit(spec, make_bundle(CELL, {})), tony_home, timeout=30
    ) as client:
        yield client


def api(job, path: str) -> str:
    return f"{job.am_url()}/api/v1/{path}"


def environ_of(job, task: str | None) -> dict[str, str]:
    """What any process of the user reads in ``/proc/<pid>/environ`` of ``task``'s executor
    (None: the AM)."""
    for p in psutil.process_iter(["environ", "cmdline"]):
        env = p.info.get("environ") or {}
        cmd = " ".join(p.info.get("cmdline") or [])
        if task is None and "tony_jupyter.am" in cmd and str(job.record.dir) in cmd:
            return env
        if task and env.get("TONY_TASK_ID") == task and env.get("TONY_JOB_ID") == job.job_id:
            return env
    raise AssertionError(f"no process of {task or 'the AM'}")


def test_the_job_token_is_in_no_file_of_the_job_dir_and_no_environment(job):
    token = job.record.token
    own_token(job)  # the cell has run its first lines
    assert "bundle token False" in job.logs("worker:0")[0]
    assert not (job.record.dir / "token").exists()
    assert job.record.layout.token_verifier.read_text() == token_verifier(token)
    for path in job.record.dir.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    for who in (None, "worker:0", "worker:1"):
        assert token not in "".join(environ_of(job, who).values()), who
    kept = job.record.token_path
    assert kept.parent.name == "tokens" and oct(kept.stat().st_mode & 0o777) == "0o600"
    assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"


def test_a_siblings_environ_holds_a_spent_secret_whose_use_revokes_its_token(job):
    own = own_token(job, "worker:0")
    beat = {"task": "worker:0", "attempt": 1}
    ok = requests.post(api(job, "executor/heartbeat"), json=beat, headers=bearer(own), timeout=5)
    assert ok.status_code == 200
    # What worker:1's code (same user) reads of worker:0: its launch's registration secret.
    stolen = environ_of(job, "worker:0")["TONY_TOKEN"]
    assert stolen and stolen != own
    r = requests.post(api(job, "executor/heartbeat"), json=beat, headers=bearer(stolen), timeout=5)
    assert r.status_code == 403
    body = {**beat, "host": "127.0.0.1", "port": 1, "pid": 1}
    r = requests.post(api(job, "executor/register"), json=body, headers=bearer(stolen), timeout=5)
    assert r.status_code == 403 and "presented twice" in r.json()["error"]
    # The token the secret bought no longer acts for worker:0 either.
    r = requests.post(api(job, "executor/heartbeat"), json=beat, headers=bearer(own), timeout=5)
    assert r.status_code == 403
    # Nor can a task's token register anew, or read the job.
    other = own_token(job, "worker:1")
    body = {"task": "worker:1", "attempt": 1, "host": "127.0.0.1", "port": 1, "pid": 1}
    r = requests.post(api(job, "executor/register"), json=body, headers=bearer(other), timeout=5)
    assert r.status_code == 403
    assert requests.get(api(job, "job"), headers=bearer(other), timeout=5).status_code == 403


def test_a_heartbeat_stream_ends_when_its_token_is_revoked(job):
    """A stream opened with a token before its revocation does not outlive it."""
    own = own_token(job, "worker:0")
    link = AMLink(job.am_url(), own, "worker:0", 1)
    port = link.post("executor/heartbeat")["beats"]
    stream = BeatStream(link, port, own, timeout=10)
    try:
        assert stream.beat(Beat({"step": 1})) == HeartbeatAnswer()
        stolen = environ_of(job, "worker:0")["TONY_TOKEN"]
        body = {"task": "worker:0", "attempt": 1, "host": "127.0.0.1", "port": 1, "pid": 1}
        url = api(job, "executor/register")
        r = requests.post(url, json=body, headers=bearer(stolen), timeout=5)
        assert r.status_code == 403 and "presented twice" in r.json()["error"]
        with pytest.raises(ConnectionAbortedError, match="token revoked"):
            stream.beat(Beat({"step": 2}))
    finally:
        stream.close()
    task = next(t for t in job.snapshot().tasks if t.id == "worker:0")
    assert task.progress != {"step": 2}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_a_registration_secret_buys_one_token_once():
    creds = TaskCredentials()
    secret = creds.issue("worker:0", 1).encode()
    assert creds.registration(secret).task == "worker:0"
    token = creds.redeem(secret)
    assert creds.task_for(token.encode()) == "worker:0"
    assert creds.task_for(secret) is None and creds.task_for(b"x") is None
    with pytest.raises(SecretReused, match="worker:0 attempt 1"):
        creds.registration(secret)
    assert creds.task_for(token.encode()) is None  # revoked
    with pytest.raises(SecretReused):
        creds.redeem(secret)
    assert creds.registration(b"never issued") is None
