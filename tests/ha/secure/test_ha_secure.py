"""`devcluster up --ha --secure`: both pairs of masters Kerberized (conftest.py: the package's
cluster, tokens dead after 60 s). Real jobs, submitted as alice with her
ticket, on the nameservice's delegation token (``ha-hdfs:devcluster``, as Hadoop's own clients
name it):

- a Keras job trains and checkpoints to HDFS through the kill of the active NameNode: its
  containers use the token with the new active NameNode, the RM renews it through the
  nameservice;
- the same job trains through the kill of the active ResourceManager: the AM resyncs with the
  new active one on its tokens (work-preserving recovery, one AM attempt), and the notebook's
  `%tony status`, `list` and `logs` reach it with SPNEGO;
- a job running past the tokens' maximum lifetime keeps writing to HDFS on new ``ha-hdfs:``
  tokens that the kernel obtained and the AM passed on;
- with no ticket, nothing is submitted.

The figures (printed, never asserted): seconds from each kill to the job's next HDFS write, to
the first call through the new active RM and to the AM's resync; the writes past the max
lifetime."""

from __future__ import annotations

import datetime
import re
import time

import pytest
import requests
from helpers.cells import CHECKPOINTED
from sklearn.datasets import load_digits

from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.hadoopconf import HadoopConf
from tony_jupyter.core.tokens import Token
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn.secure import TokenKeeper, connect
from tony_jupyter_devcluster import DevCluster, failover
from tony_jupyter_devcluster.config import NODEMANAGERS
from tony_jupyter_devcluster.ha import NAMESERVICE, RESOURCEMANAGERS

pytestmark = [pytest.mark.ha, pytest.mark.secure, pytest.mark.slow]

HA_TOKEN = f"ha-hdfs:{NAMESERVICE}"
EPOCHS, STRIKE_AT_EPOCH = 8, 3
# CHECKPOINTED (8 epochs, BackupAndRestore mirrored to HDFS) with room for the failover, and the
# service of the HDFS token the task was given (what the AM passed on from the RM).
CELL = (
    "from tony_jupyter.core.tokens import Token, hdfs_token\n"
    "token_service = Token.decode(hdfs_token()).service\n"
    + CHECKPOINTED.replace("time.sleep(0.5)", "time.sleep(1.5)")
)
FLAGS = "--workers 1 --max-attempts 2 --no-tensorboard --async"
PULL = "--pull first_epoch,attempt,token_service"


def test_no_ticket_is_refused_before_anything_with_nothing_left(
    shell, tony_home, hasec, monkeypatch, tmp_path
):
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket-here'}")
    before, staged = {a["id"] for a in hasec.apps()}, set(hasec.staging())
    with pytest.raises(BackendError) as err:
        shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", "1 + 1\n")
    message = str(err.value)
    for fragment in ("no Kerberos ticket", "kinit", "--keytab"):
        assert fragment in message, message
    assert not list_jobs(), "a job record was left"
    assert {a["id"] for a in hasec.apps()} == before, "an application was created"
    assert set(hasec.staging()) == staged, "a staging directory was left"


def _newest_write_ms(http: requests.Session, webhdfs: str, path: str) -> int:
    """The latest modification time (ms) of anything under ``path`` on HDFS, ``path``
    included: a file written, renamed or removed there moves it."""
    r = http.get(f"{webhdfs}/webhdfs/v1{path}", params={"op": "LISTSTATUS"}, timeout=5)
    r.raise_for_status()
    newest = 0
    for st in r.json()["FileStatuses"]["FileStatus"]:
        newest = max(newest, int(st["modificationTime"]))
        if st["type"] == "DIRECTORY":
            newest = max(newest, _newest_write_ms(http, webhdfs, f"{path}/{st['pathSuffix']}"))
    return newest


def _next_write_after(dc: DevCluster, path: str, after: float, timeout: float = 90.0) -> float:
    """Seconds from ``after`` (epoch s) to the first write under ``path`` that HDFS recorded
    later, asked of whichever NameNode is active (none is, for a moment, after the kill)."""
    alice = dc.session("alice")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            newest = _newest_write_ms(alice, dc.webhdfs_url, path) / 1000
        except (requests.RequestException, ValueError, KeyError):
            newest = 0.0
        if newest > after:
            return newest - after
        time.sleep(0.2)
    raise AssertionError(f"no HDFS write under {path} within {timeout:g} s of the kill")


_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


def _timed_lines(text: str, fragment: str) -> list[tuple[float, str]]:
    """(epoch s, line) of a Hadoop log's lines with ``fragment``."""
    found = []
    for line in text.splitlines():
        m = _LOG_TIME.match(line)
        if m and fragment in line:
            at = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
            found.append((at + int(m.group(2)) / 1000, line))
    return found


def _rm_lines(dc: DevCluster, fragment: str) -> list[tuple[float, str]]:
    """(epoch s, line) of both RMs' log lines with ``fragment``."""
    found = []
    for service in RESOURCEMANAGERS.values():
        text = dc.layout.log_file(service).read_text(errors="replace")
        found += _timed_lines(text, fragment)
    return found


_MAX_DATE = re.compile(r"maxDate=(\d+)")


def _renewals_failed_early(dc: DevCluster) -> list[str]:
    """The RMs' failures to renew a token before its maximum lifetime (one sent to the dead
    NameNode's address, say). At it, the RM's last try is refused ("tried to renew an expired
    token"), as Hadoop's renewer does with every token that lives that long: not counted."""
    early = []
    for at, line in _rm_lines(dc, "Exception renewing token"):
        m = _MAX_DATE.search(line)
        if m is None or at * 1000 < int(m.group(1)) - 1000:
            early.append(line)
    return early


def test_a_job_with_a_ticket_trains_through_a_namenode_failover_on_the_nameservices_token(
    shell, tony_home, hasec, hasec_cluster
):
    dc = hasec_cluster
    conf = HadoopConf.load()
    assert conf.secure and conf.default_fs == f"hdfs://{NAMESERVICE}"
    assert conf.hdfs_token_service == HA_TOKEN
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    job = shell.run_cell_magic("tony", f"{FLAGS} {PULL}", CELL)
    (rec,) = list_jobs()
    client, done = open_client(rec), None
    try:
        _wait_epoch(client, STRIKE_AT_EPOCH)
        done = failover.failover(dc, "nn", restart=False)
        checkpoints = f"/user/alice/.tony-jupyter/{rec.id}/checkpoints"
        next_write_s = _next_write_after(dc, checkpoints, done.killed_at)
        epochs_run = job.result(timeout=400)
    finally:
        if done is not None:  # the pair whole again
            failover.start_standby(dc, done.killed)
    ns = shell.user_ns
    # Trained to the end through the new active NameNode, as alice, on tokens alone.
    assert ns["attempt"] in (1, 2) and epochs_run == EPOCHS - ns["first_epoch"]
    app = hasec.wait_app_end(rec.id)
    assert (app["user"], app["finalStatus"]) == ("alice", "SUCCEEDED")
    # The task's HDFS token is the nameservice's, not one NameNode's address.
    assert ns["token_service"] == HA_TOKEN
    # The RM renewed it through the nameservice at submission, and, on a cluster renewing every
    # 30 s or less, again after the kill (a renewal sent to the dead NameNode's address would
    # be logged "Exception renewing token" before the token's max date, and the token dropped).
    renewed = _rm_lines(
        dc, f"Renewed delegation-token= [Kind: HDFS_DELEGATION_TOKEN, Service: {HA_TOKEN}"
    )
    assert renewed, "the RM never renewed the job's HDFS token"
    assert not _renewals_failed_early(dc)
    renews_checked = dc.security is not None and dc.security.token_renew_interval_s <= 30
    if renews_checked:
        assert any(at > done.killed_at for at, _ in renewed), renewed
    am_log = _am_log(dc, rec.id)
    assert "UnknownHostException" not in am_log
    print(
        f"\n[figures] Kerberized NameNode failover ({done.killed} killed, {done.active} "
        f"active): {done.seconds:.1f} s to the new active; the job's next HDFS write "
        f"{next_write_s:.1f} s after the kill; struck after epoch {STRIKE_AT_EPOCH}, attempt "
        f"{ns['attempt']} finished; token service {ns['token_service']}; RM renewals of it "
        f"after the kill: {sum(at > done.killed_at for at, _ in renewed)}"
    )


def _am_log(dc: DevCluster, app_id: str) -> str:
    for nm in NODEMANAGERS:
        for path in (dc.layout.nm_log_dir(nm) / app_id).glob("*_000001/am.stderr"):
            return path.read_text(errors="replace")
    raise AssertionError(f"no AM log of {app_id}")


def _first_call(call, killed_at: float, timeout: float = 90.0) -> float:
    """Seconds from the kill to the first ``call()`` that succeeds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            call()
            return time.time() - killed_at
        except BackendError:
            assert time.monotonic() < deadline, "no call succeeded through the new active RM"
            time.sleep(0.05)


def test_a_job_with_a_ticket_trains_through_a_resourcemanager_failover_and_the_client_follows(
    shell, tony_home, hasec, hasec_cluster, capsys
):
    dc = hasec_cluster
    conf = HadoopConf.load()
    assert conf.secure and len(conf.rm.urls) == 2
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    job = shell.run_cell_magic("tony", f"{FLAGS} {PULL}", CELL)
    (rec,) = list_jobs()
    client, done = open_client(rec), None
    rm = connect().rm  # the notebook's RM client: SPNEGO as alice, to either RM
    try:
        _wait_epoch(client, STRIKE_AT_EPOCH)
        done = failover.failover(dc, "rm", restart=False)
        first_call_s = _first_call(lambda: rm.app(rec.id), done.killed_at)
        assert rm.urls[rm.active] == failover.web_url(dc.layout, done.active)
        # While the job still trains: its status and the list, through the new active RM.
        capsys.readouterr()
        shell.run_line_magic("tony", f"status {rec.id}")
        shell.run_line_magic("tony", "list")
        running = capsys.readouterr().out
        epochs_run = job.result(timeout=400)
    finally:
        if done is not None:  # the pair whole again
            failover.start_standby(dc, done.killed)
    ns = shell.user_ns
    assert f"job {rec.id}" in running and running.count(rec.id) >= 2, running
    # Work-preserving recovery: the AM re-registered with the new active RM on its tokens (the
    # AMRM token, the RM's principal on rm2) and went on; one AM attempt, every epoch trained.
    app = hasec.wait_app_end(rec.id)
    assert (app["user"], app["finalStatus"]) == ("alice", "SUCCEEDED")
    attempts = hasec.alice.get(
        f"{hasec.rm}/ws/v1/cluster/apps/{rec.id}/appattempts", timeout=10
    ).json()["appAttempts"]["appAttempt"]
    assert len(attempts) == 1, attempts
    assert epochs_run == EPOCHS - ns["first_epoch"]
    assert ns["token_service"] == HA_TOKEN
    # After it, the notebook's commands reach the new active RM with SPNEGO.
    assert open_client(rec).snapshot().state == "SUCCEEDED"
    capsys.readouterr()
    shell.run_line_magic("tony", "list")
    shell.run_line_magic("tony", f"logs {rec.id} worker:0")
    out = capsys.readouterr().out
    assert rec.id in out and f"Epoch {EPOCHS}/{EPOCHS}" in out, out
    assert not _renewals_failed_early(dc)
    # The AM's AMRMClient found the new active RM and resynced with it (re-registered).
    resynced = _timed_lines(_am_log(dc, rec.id), "out of sync with ResourceManager, hence resync")
    assert resynced and resynced[0][0] > done.killed_at - 1, resynced
    print(
        f"\n[figures] Kerberized ResourceManager failover ({done.killed} killed, {done.active} "
        f"active): {done.seconds:.1f} s to the new active; the first call of the notebook's RM "
        f"client (SPNEGO) through it {first_call_s:.1f} s after the kill; the AM resynced "
        f"{resynced[0][0] - done.killed_at:.1f} s after the kill; struck after epoch "
        f"{STRIKE_AT_EPOCH}; AM attempts 1, training attempt {ns['attempt']}"
    )


def _wait_epoch(client, epoch: int, timeout: float = 300.0) -> None:
    """Until attempt 1's worker:0 has trained ``epoch`` epochs."""
    deadline = time.monotonic() + timeout
    while True:
        snap = client.snapshot()
        worker = snap.task("worker:0")
        done = ((worker.progress if worker else None) or {}).get("epoch_done", 0)
        if snap.attempt == 1 and done >= epoch:
            return
        assert snap.state not in ("FAILED", "KILLED"), snap.state
        assert time.monotonic() < deadline, f"never reached epoch {epoch}"
        time.sleep(0.05)


# Writes to HDFS every second until 10 s past the maximum lifetime of the HDFS token it started
# with, through the token it holds at each write (tokens.webhdfs_client reads the current one).
OUTLIVE_CELL = """
import os, time
from tony_jupyter.core import tokens
from tony_jupyter.core.tokens import Token
hdfs = tokens.webhdfs_client(os.environ["TONY_WEBHDFS_URL"], None)
first = tokens.hdfs_token()
until = Token.decode(first).max_date_ms() / 1000 + 10
writes = []
while time.time() < until or len(writes) < 2:
    hdfs.write(f"{BASE}/{len(writes)}", data=b"x", overwrite=True)
    writes.append(time.time())
    time.sleep(1)
last = tokens.hdfs_token()
"""


def test_a_job_outliving_its_tokens_max_lifetime_keeps_writing_on_new_nameservice_tokens(
    shell, tony_home, hasec, hasec_cluster
):
    """Past the submitted tokens' maximum lifetime (60 s here), the RM cannot renew them any
    more: the kernel (TokenKeeper) obtains new ``ha-hdfs:<ns>`` ones through the nameservice and
    hands them to the AM, which passes them on to the task; the old one is refused by then."""
    dc = hasec_cluster
    max_life = dc.security.token_max_lifetime_s if dc.security else 0
    assert 0 < max_life <= 120, f"the module's cluster has tokens living {max_life} s"
    base = f"/user/alice/ha-outlive-{time.time_ns()}"
    shell.user_ns["BASE"] = base
    started = time.monotonic()
    shell.run_cell_magic(
        "tony", "--workers 1 --no-tensorboard --pull first,last,writes", OUTLIVE_CELL
    )
    took = time.monotonic() - started
    (rec,) = list_jobs()
    ns = shell.user_ns
    first, last = Token.decode(ns["first"]), Token.decode(ns["last"])
    dead_at = (first.max_date_ms() or 0) / 1000
    assert (first.service, last.service) == (HA_TOKEN, HA_TOKEN)
    assert last.identifier != first.identifier, "the task never got a new token"
    assert (last.max_date_ms() or 0) / 1000 > dead_at
    after = [t for t in ns["writes"] if t > dead_at]
    assert after, f"no write after the first token's max lifetime ({dead_at})"
    assert TokenKeeper.get().renewals.get(rec.id, 0) >= 1
    # Every write landed, those after the first token died included.
    alice = dc.session("alice")
    r = alice.get(f"{dc.webhdfs_url}/webhdfs/v1{base}", params={"op": "LISTSTATUS"}, timeout=10)
    assert len(r.json()["FileStatuses"]["FileStatus"]) == len(ns["writes"])
    # The first token is dead: the active NameNode refuses it now.
    refused = requests.get(
        f"{dc.webhdfs_url}/webhdfs/v1{base}",
        params={"op": "LISTSTATUS", "delegation": ns["first"]},
        timeout=10,
        verify=alice.verify,
    )
    assert refused.status_code in (401, 403), (refused.status_code, refused.text[:300])
    assert hasec.wait_app_end(rec.id)["finalStatus"] == "SUCCEEDED"
    alice.delete(
        f"{dc.webhdfs_url}/webhdfs/v1{base}", params={"op": "DELETE", "recursive": "true"}
    ).raise_for_status()
    print(
        f"\n[figures] tokens past their max lifetime ({max_life} s) on HA: "
        f"{len(ns['writes'])} HDFS writes, {len(after)} after the first token died, on "
        f"{TokenKeeper.get().renewals[rec.id]} new set(s) of {HA_TOKEN} tokens; the job took "
        f"{took:.0f} s"
    )
