"""HA masters on hosts of their own (`devcluster up --hosts --ha --tls`): nn1, rm1 and ZooKeeper on
``master``, nn2 and rm2 on ``master2``, HTTPS only. One cluster for the module and one job: a
kernel on the edge trains with checkpoints on the nameservice through the kill of the active
NameNode and then of the active ResourceManager (edge_ha.py); `status` (from the machine, which
asks from the edge) shows each pair whole again; `down` leaves nothing.

The figures (printed, never asserted): seconds from each kill to the first call of the
notebook's own client that the new active master answered, and the training steps lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import on, on_edge  # tests/hosts/conftest.py

from tony_jupyter_devcluster import DevCluster, netns
from tony_jupyter_devcluster.ha import NAMENODES, NAMESERVICE, RESOURCEMANAGERS
from tony_jupyter_devcluster.hosts import MASTER2, Topology

pytestmark = [pytest.mark.hosts, pytest.mark.slow]
HERE = Path(__file__).parent
STEPS_PER_EPOCH, EPOCHS = 10, 14  # edge_ha.py's
DIR_ENV = "TONY_TEST_HOSTS_HA_DIR"  # an `up --hosts --ha` cluster already up: used, left up


@pytest.fixture(scope="module")
def ha_hosts_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    if os.geteuid() != 0:
        pytest.fail("tests marked hosts need root (network namespaces, a bridge, mounts)")
    if os.environ.get(DIR_ENV):
        dc = DevCluster(Path(os.environ[DIR_ENV]))
        assert dc.layout.ha and dc.hosts is not None and dc.is_running(), dc.dir
        yield dc
        return
    started = time.monotonic()
    dc = DevCluster(tmp_path_factory.mktemp("hosts-ha"), hosts=True, ha=True, tls_on=True)
    dc.up()
    print(f"\n[figures] `up --hosts --ha --tls`: {time.monotonic() - started:.0f} s")
    try:
        yield dc
    finally:
        dc.down()
    # Nothing of it left: no namespace, link, mount dir or process (master2's included).
    assert netns.leftovers(Topology.for_dir(dc.dir, ha=True)) == []
    left = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(dc.dir) in " ".join(p.info["cmdline"] or [])
    ]
    assert not left, f"left running after down: {left}"


def _site(conf: Path, name: str) -> dict[str, str]:
    root = ET.parse(conf / name).getroot()
    return {p.findtext("name") or "": p.findtext("value") or "" for p in root.iter("property")}


def _status(dc: DevCluster) -> dict[str, list[str]]:
    """`devcluster status` from the machine's own namespace (it asks from the edge): service
    -> [host, pid, alive, ha state]."""
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", "status", "--dir", str(dc.dir)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    names = (*NAMENODES.values(), *RESOURCEMANAGERS.values())
    rows = {f[0]: f[1:5] for f in map(str.split, res.stdout.splitlines()) if f and f[0] in names}
    assert "HTTPS only" in res.stdout or not dc.layout.tls, res.stdout
    return rows


def test_each_pair_spans_two_hosts_named_in_the_edges_client_configuration(ha_hosts_cluster):
    dc = ha_hosts_cluster
    rows = _status(dc)
    for pair in (NAMENODES, RESOURCEMANAGERS):
        first, second = (rows[s] for s in pair.values())
        assert (first[0], second[0]) == ("master", MASTER2), rows
        assert sorted([first[3], second[3]]) == ["active", "standby"], rows
    # What `devcluster env --host edge` gives a kernel there: the nameservice and both rm-ids,
    # each master by its host name.
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", "env", "--dir", str(dc.dir)]
    env = subprocess.run([*cmd, "--host", "edge"], capture_output=True, text=True, check=True)
    conf = Path(
        next(line for line in env.stdout.splitlines() if "HADOOP_CONF_DIR=" in line)
        .split("=", 1)[1]
        .strip("'")
    )
    core, hdfs, yarn = (_site(conf, f"{s}-site.xml") for s in ("core", "hdfs", "yarn"))
    assert core["fs.defaultFS"] == f"hdfs://{NAMESERVICE}"
    assert hdfs[f"dfs.ha.namenodes.{NAMESERVICE}"] == "nn1,nn2"
    assert hdfs[f"dfs.namenode.rpc-address.{NAMESERVICE}.nn1"].startswith("master:")
    assert hdfs[f"dfs.namenode.rpc-address.{NAMESERVICE}.nn2"].startswith(f"{MASTER2}:")
    assert yarn["yarn.resourcemanager.ha.rm-ids"] == "rm1,rm2"
    assert (
        yarn["yarn.resourcemanager.hostname.rm1"],
        yarn["yarn.resourcemanager.hostname.rm2"],
    ) == ("master", MASTER2)
    # master2 is a host like the others: its name resolves from every host.
    for host in dc.hosts.topology.names:
        got = on(dc, host, "getent", "hosts", MASTER2)
        assert got.returncode == 0 and got.stdout.split()[:2] == ["198.18.0.12", MASTER2], got


# The first job from the edge packs the venv (about 2 GB, TensorFlow) unless this host's
# envcache has it: minutes on 2 busy cores.
@pytest.mark.timeout(2400)
def test_a_job_from_the_edge_trains_through_a_namenode_then_a_resourcemanager_failover(
    ha_hosts_cluster, node_venv, tmp_path
):
    dc = ha_hosts_cluster
    name = f"hosts-ha-{uuid.uuid4().hex[:6]}"
    _, out = on_edge(
        dc,
        node_venv,
        tmp_path / "notebook",
        "edge_ha.py",
        str(dc.dir),
        name,
        result=name,
        timeout=2000,
    )
    assert "error" not in out and "strike_error" not in out, out
    assert out["kernel_host"] == "edge"
    for kind, pair in (("nn", NAMENODES), ("rm", RESOURCEMANAGERS)):
        struck = out.get(kind, {})
        assert "error" not in struck and "killed" in struck, (kind, out)
        assert {struck["killed"], struck["active"]} == set(pair.values()), struck
        # the two of a pair are on two hosts: the new active one is on the other
        assert dc.layout.host_of(struck["killed"]) != dc.layout.host_of(struck["active"])
    assert out["nn"]["epoch"] < out["rm"]["epoch"]
    # Trained every epoch, checkpoints on the nameservice through the new active NameNode; the
    # AM re-registered with the new active RM (work-preserving recovery): one AM attempt.
    assert out["state"] == "SUCCEEDED" and out["final"] == ["FINISHED", "SUCCEEDED"], out
    assert out["am_attempts"] == 1, out
    assert out["attempt"] in (1, 2) and out["epochs_run"] == EPOCHS - out["first_epoch"], out
    assert out["staged_via"] == f"hdfs://{NAMESERVICE}"
    # %tony list and status reached the RM that became active.
    assert out["job_id"] in out["list"] and "SUCCEEDED" in out["status"], out
    lost = 0 if out["attempt"] == 1 else max(0, out["rm"]["epoch"] - out["first_epoch"])
    print(
        f"\n[figures] from the edge, job {out['seconds']:.0f} s: NameNode failover "
        f"({out['nn']['killed']} killed after epoch {out['nn']['epoch']}, {out['nn']['active']} "
        f"active in {out['nn']['to_active_s']:.1f} s): first staging call through the "
        f"notebook's client {out['nn']['first_call_s']:.1f} s after the kill; ResourceManager "
        f"failover ({out['rm']['killed']} killed after epoch {out['rm']['epoch']}, "
        f"{out['rm']['active']} active in {out['rm']['to_active_s']:.1f} s): first RM call "
        f"{out['rm']['first_call_s']:.1f} s after the kill; AM attempts {out['am_attempts']}, "
        f"training attempt {out['attempt']}, training steps lost: {lost * STEPS_PER_EPOCH}; "
        f"the AM's HDFS client failed over itself: {'yes' if out['am_failed_over'] else 'no'}"
    )
    # Each pair whole again (edge_ha.py started the killed ones as standbys).
    rows = _status(dc)
    for pair in (NAMENODES, RESOURCEMANAGERS):
        assert sorted(rows[s][3] for s in pair.values()) == ["active", "standby"], rows
