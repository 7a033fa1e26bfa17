"""Jobs on an HA devcluster (`devcluster up --ha`; and `--tls`: conftest.py): a real Keras job
checkpointing to HDFS trains through the kill of the active NameNode and of the active
ResourceManager; the notebook's clients follow the new active master; a configuration naming an
RM without an address, or RMs of which none is active, is refused before anything is submitted,
with nothing left.

The figures (printed, never asserted): seconds from the kill to the first call of the notebook's
own client that the new active master answered, and the training steps lost."""

from __future__ import annotations

import json
import shutil
import threading
import time
import xml.etree.ElementTree as ET

import pytest
from helpers.cells import CHECKPOINTED
from sklearn.datasets import load_digits

from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.hadoopconf import HadoopConf
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn import rm as rm_client
from tony_jupyter.launcher.yarn.rm import RMClient
from tony_jupyter.launcher.yarn.staging import Staging
from tony_jupyter_devcluster import failover
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.config import NODEMANAGERS
from tony_jupyter_devcluster.ha import NAMENODES, RESOURCEMANAGERS

pytestmark = [pytest.mark.ha, pytest.mark.slow]

# CHECKPOINTED with room for a failover: 1.5 s after each of its 8 epochs (10 steps each), so
# that the job still trains, and mirrors checkpoints to HDFS, while the masters change. One
# worker: what is under test is the masters' failover, not MWMS between workers. With two, one
# run on the loaded 2-core machine ended FAILED after both had trained every epoch: worker:1
# stuck in TensorFlow's coordination shutdown once worker:0 had left (the RM had failed over
# 40 s before, the AM had resynced; nothing of YARN or HDFS in either worker's log).
STEPS_PER_EPOCH, EPOCHS = 10, 8
CELL = CHECKPOINTED.replace("time.sleep(0.5)", "time.sleep(1.5)")
assert CELL != CHECKPOINTED
FLAGS = "--workers 1 --max-attempts 2 --no-tensorboard --pull first_epoch,attempt"
STRIKE_AT_EPOCH = 3


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def test_status_shows_both_masters_of_each_pair_and_the_active_one(ha_cluster, capsys):
    assert main(["status", "--dir", str(ha_cluster.dir)]) == 0
    out = capsys.readouterr().out
    states = {}
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] in (*NAMENODES.values(), *RESOURCEMANAGERS.values()):
            states[fields[0]] = fields[3]
    assert sorted(states[s] for s in NAMENODES.values()) == ["active", "standby"], out
    assert sorted(states[s] for s in RESOURCEMANAGERS.values()) == ["active", "standby"], out
    assert "zookeeper" in out and "HA: nameservice devcluster" in out
    active_rm = next(s for s in RESOURCEMANAGERS.values() if states[s] == "active")
    assert ha_cluster.rm_url == failover.web_url(ha_cluster.layout, active_rm)


def _first_call(call, killed_at: float, timeout: float = 60.0) -> float:
    """Seconds from the kill to the first call through the notebook's client that succeeds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            call()
            return time.time() - killed_at
        except BackendError:
            assert time.monotonic() < deadline, "no call succeeded through the new active master"
            time.sleep(0.05)


def _train_through(shell, ha_cluster, kind: str, call_after) -> dict:
    """Run CELL; once worker:0 has trained STRIKE_AT_EPOCH epochs, `failover` the active
    master of ``kind`` (restarted as standby afterwards); time ``call_after()`` through the new
    active one."""
    struck: dict = {}
    others = {r.id for r in list_jobs()}

    def striker():
        while not (new := [r for r in list_jobs() if r.id not in others]):
            time.sleep(0.05)

        def strike(snap):
            done = failover.failover(ha_cluster, kind, restart=False)
            struck["done"] = done
            struck["first_call_s"] = _first_call(call_after, done.killed_at)

        try:
            struck["at"], struck["epoch"] = _strike_at_epoch(new[0], strike)
        except Exception as e:  # noqa: BLE001 - failed below, with the reason
            struck["error"] = repr(e)

    t = threading.Thread(target=striker, daemon=True)
    t.start()
    try:
        struck["epochs_run"] = shell.run_cell_magic("tony", FLAGS, CELL)
    finally:
        t.join(120)
        if "done" in struck:  # the pair whole again for what follows
            failover.start_standby(ha_cluster, struck["done"].killed)
    assert "done" in struck, f"the failover never happened: {struck.get('error')}"
    return struck


def _strike_at_epoch(record, strike, timeout: float = 300.0) -> tuple[float, int]:
    """Once attempt 1's worker:0 has trained STRIKE_AT_EPOCH epochs, ``strike(snapshot)``."""
    client = open_client(record)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = client.snapshot()
        worker = snap.task("worker:0")
        done = ((worker.progress if worker else None) or {}).get("epoch_done", 0)
        if snap.attempt == 1 and done >= STRIKE_AT_EPOCH:
            strike(snap)
            return time.time(), done
        time.sleep(0.05)
    raise TimeoutError(f"attempt 1 never reached epoch {STRIKE_AT_EPOCH} to strike at")


def _steps_lost(shell, struck) -> int:
    """Steps trained twice: none if attempt 1 went on; else those after the checkpoint that
    attempt 2 resumed from, up to the epoch the kill came at."""
    ns = shell.user_ns
    if ns["attempt"] == 1:
        return 0
    return max(0, struck["epoch"] - ns["first_epoch"]) * STEPS_PER_EPOCH


def test_a_job_trains_and_checkpoints_through_a_namenode_failover(digits, cluster, ha_cluster):
    conf = HadoopConf.load()
    assert conf.default_fs == "hdfs://devcluster" and len(conf.webhdfs.urls) == 2
    staging = Staging(conf.webhdfs, conf.user, conf.default_fs)
    struck = _train_through(digits, ha_cluster, "nn", staging.list_jobs)
    done, ns = struck["done"], digits.user_ns
    assert done.killed != done.active
    # The last epochs ran after the kill, and their checkpoints went to HDFS through the new
    # active NameNode: the job ends SUCCEEDED, having trained every epoch.
    assert ns["attempt"] in (1, 2)
    assert struck["epochs_run"] == EPOCHS - ns["first_epoch"]
    (rec,) = list_jobs()
    assert open_client(rec).snapshot().state == "SUCCEEDED"
    assert cluster.wait_app_end(rec.id)["finalStatus"] == "SUCCEEDED"
    info = json.loads(rec.layout.yarn_info.read_text())
    # Staged through the nameservice, both NameNodes known to the job (AM and executors).
    assert info["default_fs"] == "hdfs://devcluster"
    assert info["webhdfs_url"] == conf.webhdfs.url and ";" in info["webhdfs_url"]
    # The AM's Hadoop client (JPype) got the cluster's HA client keys: it resolved the
    # nameservice and, with a file open on HDFS at the kill, failed over by itself.
    am_log = _am_log(ha_cluster, rec.id)
    assert "UnknownHostException" not in am_log
    am_failed_over = "Trying to failover" in am_log
    print(
        f"\n[figures] NameNode failover ({done.killed} killed, {done.active} active): "
        f"{done.seconds:.1f} s to the new active, first staging call through the notebook's "
        f"client {struck['first_call_s']:.1f} s after the kill; struck after epoch "
        f"{struck['epoch']}; attempt {ns['attempt']} finished (attempt lost: "
        f"{'no' if ns['attempt'] == 1 else 'yes'}), training steps lost: "
        f"{_steps_lost(digits, struck)}; the AM's HDFS client failed over itself: "
        f"{'yes' if am_failed_over else 'no (no call of it at the time)'}"
    )


def _am_log(ha_cluster, app_id: str) -> str:
    """The AM's stderr (its JVM's log) from the NodeManagers' log dirs."""
    for nm in NODEMANAGERS:
        for path in (ha_cluster.layout.nm_log_dir(nm) / app_id).glob("*_000001/am.stderr"):
            return path.read_text(errors="replace")
    raise AssertionError(f"no AM log of {app_id}")


def test_a_job_and_the_client_survive_a_resourcemanager_failover(
    digits, cluster, ha_cluster, capsys
):
    conf = HadoopConf.load()
    assert len(conf.rm.urls) == 2
    sleepy = digits.run_cell_magic(
        "tony", "--workers 1 --async --no-tensorboard --name sleepy", "import time\ntime.sleep(600)"
    )
    rm = RMClient(conf.rm, conf.user)
    try:
        struck = _train_through(digits, ha_cluster, "rm", lambda: rm.app(sleepy.job_id))
    except BaseException:
        sleepy.kill()
        raise
    done, ns = struck["done"], digits.user_ns
    trained = next(r for r in list_jobs() if r.id != sleepy.job_id)
    # Work-preserving recovery: the AM re-registered with the new active RM, its containers
    # went on; the job needed no second attempt of the AM nor of the training.
    assert cluster.wait_app_end(trained.id)["finalStatus"] == "SUCCEEDED"
    attempts = cluster.http.get(
        f"{cluster.rm}/ws/v1/cluster/apps/{trained.id}/appattempts", timeout=10
    ).json()["appAttempts"]["appAttempt"]
    assert len(attempts) == 1, attempts
    assert struck["epochs_run"] == EPOCHS - ns["first_epoch"]
    # The client keeps working through the new active RM: snapshot, list, logs, kill.
    assert open_client(trained).snapshot().state == "SUCCEEDED"
    assert sleepy.client.snapshot().state == "RUNNING"
    capsys.readouterr()
    digits.run_line_magic("tony", "list")
    out = capsys.readouterr().out
    assert trained.id in out and sleepy.job_id in out
    digits.run_line_magic("tony", f"logs {trained.id} worker:0")
    assert "Epoch 8/8" in capsys.readouterr().out
    digits.run_line_magic("tony", f"kill {sleepy.job_id}")
    assert "KILLED" in capsys.readouterr().out
    assert cluster.wait_app_end(sleepy.job_id)["finalStatus"] == "KILLED"
    print(
        f"\n[figures] ResourceManager failover ({done.killed} killed, {done.active} active): "
        f"{done.seconds:.1f} s to the new active, first call through the notebook's RM client "
        f"{struck['first_call_s']:.1f} s after the kill; struck after epoch {struck['epoch']}; "
        f"AM attempts 1, training attempt {ns['attempt']}, training steps lost: "
        f"{_steps_lost(digits, struck)}"
    )


def test_parquet_on_the_nameservice_is_written_here_and_read_by_a_job_after_a_failover(
    shell, cluster, ha_cluster
):
    """tony_jupyter.data through the nameservice, not a NameNode's address: the notebook host
    writes Parquet to hdfs://devcluster/..., the active NameNode is killed, and a job's task
    reads all of it through the new active one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tony_jupyter import data

    base = f"/user/{cluster.user}/ha-data-{time.time_ns()}"
    fs, path = data.filesystem(f"hdfs://devcluster{base}")
    for i in range(2):
        pq.write_table(
            pa.table({"x": list(range(i * 50, i * 50 + 50))}), f"{path}/p{i}.parquet", filesystem=fs
        )
    done = failover.failover(ha_cluster, "nn")
    assert done.active in NAMENODES.values()
    shell.user_ns["URL"] = f"hdfs://devcluster{base}"
    cell = (
        "from tony_jupyter import data\n"
        "batches = data.batches(URL, batch_size=16, shard=False)\n"
        "rows = sorted(int(v) for b in batches for v in b['x'])\n"
    )
    shell.run_cell_magic("tony", "--workers 1 --no-tensorboard --pull rows", cell)
    assert shell.user_ns["rows"] == list(range(100))


def _conf_dir_without(ha_cluster, tmp_path, edit) -> str:
    """A copy of the cluster's client configuration with ``edit(yarn_site_root)`` applied."""
    conf = tmp_path / "conf"
    shutil.copytree(ha_cluster.conf_dir, conf)
    tree = ET.parse(conf / "yarn-site.xml")
    edit(tree.getroot())
    tree.write(conf / "yarn-site.xml")
    return str(conf)


def _drop(*names: str):
    def edit(root):
        for prop in list(root.iter("property")):
            if prop.findtext("name") in names:
                root.remove(prop)

    return edit


def _move_webapps(ports: dict[str, int]):
    def edit(root):
        for prop in root.iter("property"):
            name = prop.findtext("name") or ""
            rm_id = name.rpartition(".")[2]
            web = ("yarn.resourcemanager.webapp.address.", "yarn.resourcemanager.webapp.https.")
            if name.startswith(web) and rm_id in ports:
                prop.find("value").text = f"127.0.0.1:{ports[rm_id]}"  # type: ignore[union-attr]

    return edit


def _refused(shell, cluster, *fragments: str) -> str:
    before, staged = {a["id"] for a in cluster.apps()}, set(cluster.staging())
    with pytest.raises(BackendError) as err:
        shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", "1 + 1\n")
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, message
    assert not list_jobs(), "a job record was left"
    assert {a["id"] for a in cluster.apps()} == before, "an application was created"
    assert set(cluster.staging()) == staged, "a staging directory was left"
    return message


def test_an_rm_id_without_an_address_or_no_active_rm_is_refused_with_nothing_left(
    shell, cluster, ha_cluster, tmp_path, monkeypatch
):
    no_rm2 = _conf_dir_without(
        ha_cluster,
        tmp_path / "a",
        _drop(
            "yarn.resourcemanager.webapp.address.rm2",
            "yarn.resourcemanager.webapp.https.address.rm2",
            "yarn.resourcemanager.hostname.rm2",
        ),
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", no_rm2)
    _refused(shell, cluster, "ResourceManager 'rm2'", "has no address", "hostname.rm2")

    # Both RMs' web addresses moved where nothing listens: no active RM within the retries
    # (bounded at 3 s here instead of 20 s: the same code path, a shorter wait).
    offset = ha_cluster.layout.port_offset
    nowhere = {"rm1": 8089 + offset, "rm2": 8189 + offset}
    monkeypatch.setenv(
        "HADOOP_CONF_DIR", _conf_dir_without(ha_cluster, tmp_path / "b", _move_webapps(nowhere))
    )
    monkeypatch.setattr(rm_client, "FAILOVER_WAIT_S", 3.0)
    message = _refused(shell, cluster, "cannot reach an active YARN ResourceManager")
    for port in nowhere.values():
        assert f"127.0.0.1:{port}" in message, message
