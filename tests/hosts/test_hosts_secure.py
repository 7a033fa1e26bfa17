"""Kerberos on the several-host cluster (`devcluster up --hosts --secure`), from a kernel on the
edge host: the KDC on master, every daemon's principal naming its own host, and alice's ticket
(`devcluster env --host edge --user alice`, as a user's ``kinit`` there) the only credential
the notebook has. Its own cluster for the module (the plain hosts modules keep theirs)."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import on, on_edge  # tests/hosts/conftest.py

from tony_jupyter_devcluster import DevCluster, netns
from tony_jupyter_devcluster.hosts import host_address

pytestmark = [pytest.mark.hosts, pytest.mark.secure, pytest.mark.slow]
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def secure_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A several-host secure cluster for the module: ``$TONY_JUPYTER_DEVCLUSTER_DIR``'s if one
    runs there (left running), else one of its own, started and stopped here."""
    if os.geteuid() != 0:
        pytest.fail("tests marked hosts need root (network namespaces, a bridge, mounts)")
    env_dir = os.environ.get("TONY_JUPYTER_DEVCLUSTER_DIR")
    if env_dir:
        existing = DevCluster(Path(env_dir))
        if existing.hosts is not None and existing.security and existing.is_running():
            yield existing
            return
    cluster = DevCluster(tmp_path_factory.mktemp("hosts-secure"), hosts=True, security=True)
    started = time.monotonic()
    cluster.up()
    print(json.dumps({"up_hosts_secure_s": round(time.monotonic() - started, 1)}))
    kdc = cluster.layout.pid_file("kdc")
    kdc_pid = int(kdc.read_text().split()[0])
    try:
        yield cluster
    finally:
        cluster.down()
    # `down` took it all: the KDC on master with the daemons, and every namespace and link.
    assert not psutil.pid_exists(kdc_pid) and not kdc.exists()
    assert netns.leftovers(cluster.hosts.topology) == []


def _alice_env(cluster: DevCluster) -> dict[str, str]:
    """What `eval $(devcluster env --host edge --user alice)` leaves in a shell on the edge."""
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", "env", "--dir", str(cluster.dir)]
    out = subprocess.run(
        [*cmd, "--host", "edge", "--user", "alice"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    env = {}
    for line in out.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0]
    return env


def _on_edge(cluster, venv: Path, notebook: Path, env: dict, *args: str) -> dict:
    """edge_secure.py MODE NAME run by the venv's Python on the edge; its JSON."""
    return on_edge(cluster, venv, notebook, "edge_secure.py", *args, result=args[1], env=env)[1]


def test_principals_name_their_hosts_and_the_kdc_runs_on_master(secure_hosts):
    layout = secure_hosts.layout
    krb5 = layout.krb5_conf.read_text()
    assert f"kdc = master:{layout.ports('kdc')['kdc']}" in krb5
    kdc_pid = int(layout.pid_file("kdc").read_text().split()[0])
    assert kdc_pid in _pids(secure_hosts, "master")
    logins = {}
    names = ("namenode", "resourcemanager", "datanode", "datanode2", "datanode3", "nm1", "nm2")
    for name in (*names, "nm3"):
        text = layout.log_file(name).read_text()
        logins[name] = text.split("Login successful for user ", 1)[1].split()[0]
    assert logins == {
        "namenode": "nn/master@DEVCLUSTER.TEST",
        "resourcemanager": "rm/master@DEVCLUSTER.TEST",
        "datanode": "dn/worker1@DEVCLUSTER.TEST",
        "datanode2": "dn/worker2@DEVCLUSTER.TEST",
        "nm1": "nm/worker1@DEVCLUSTER.TEST",
        "nm2": "nm/worker2@DEVCLUSTER.TEST",
        "datanode3": "dn/worker3@DEVCLUSTER.TEST",
        "nm3": "nm/worker3@DEVCLUSTER.TEST",
    }
    # On the edge: a ticket from `env --host edge --user alice`, and SPNEGO to HTTP/master;
    # without one, the RM answers 401.
    env = _alice_env(secure_hosts)
    assert env["KRB5_CONFIG"] == str(layout.krb5_conf)
    curl = "curl -s -o /dev/null -w '%{http_code} ' "
    rm = f"{secure_hosts.rm_url}/ws/v1/cluster/info"
    probe = f"{curl}--negotiate -u : {rm}; {curl}{rm}; echo; klist"
    got = on(secure_hosts, "edge", "bash", "-c", probe, env=env)
    codes, _, tickets = got.stdout.partition("\n")
    assert codes.split() == ["200", "401"], got.stdout + got.stderr
    assert "Default principal: alice@DEVCLUSTER.TEST" in tickets, got.stdout + got.stderr
    assert "HTTP/master@DEVCLUSTER.TEST" in tickets, tickets  # the RM's, named by its host


def _pids(cluster: DevCluster, host: str) -> list[int]:
    netns = cluster.hosts.host(host).netns
    listing = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    return [int(p) for p in listing.stdout.split()]


@pytest.mark.timeout(1500)
def test_no_ticket_on_the_edge_is_refused_before_submit(secure_hosts, node_venv, tmp_path):
    notebook = tmp_path / "notebook"
    alice = _alice_env(secure_hosts)
    name = f"hosts-noticket-{uuid.uuid4().hex[:6]}"
    before = _on_edge(secure_hosts, node_venv, notebook, alice, "left", f"{name}-before")
    no_ticket = {**alice, "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket-here'}"}
    out = _on_edge(secure_hosts, node_venv, notebook, no_ticket, "noticket", name)
    assert out["kernel_host"] == "edge"
    assert out.get("type") == "BackendError", out
    assert "no Kerberos ticket" in out["error"] and "kinit" in out["error"], out
    after = _on_edge(secure_hosts, node_venv, notebook, alice, "left", name)
    assert after["live"] == [] and after["apps"] == before["apps"], (before, after)
    assert after["staged"] == before["staged"], (before, after)


@pytest.mark.timeout(1500)  # the first job packs the venv (TensorFlow) on the kernel's side
def test_mwms_as_alice_from_the_edge_with_tokens_naming_master(secure_hosts, node_venv, tmp_path):
    notebook = tmp_path / "notebook"
    name = f"hosts-secure-mwms-{uuid.uuid4().hex[:6]}"
    out = _on_edge(secure_hosts, node_venv, notebook, _alice_env(secure_hosts), "job", name)
    print(json.dumps(out))
    assert "error" not in out, out["error"]
    assert out["kernel_host"] == "edge"
    assert out["app"]["user"] == "alice", out
    assert [out["app"]["state"], out["app"]["finalStatus"]] == ["FINISHED", "SUCCEEDED"], out
    assert out["replicas"] == 2 and math.isfinite(out["loss"]), out
    # The HDFS token the kernel got for the job names the NameNode's RPC address on master
    # (Hadoop's service: the address, not the name), not 127.0.0.1 or the edge.
    nn_rpc = secure_hosts.layout.ports("namenode")["rpc"]
    assert out["token_kind"] == "HDFS_DELEGATION_TOKEN", out
    assert out["token_service"] == f"{host_address('master')}:{nn_rpc}", out
    # Both workers' containers ran on worker hosts; the chief's checkpoint reached HDFS.
    assert set(out["task_hosts"].values()) <= {"worker1", "worker2"}, out
    assert out["app"]["amHostHttpAddress"].split(":")[0] in ("worker1", "worker2"), out
    assert out["in_hdfs"] == ["ckpt-1.weights.h5", "ckpt-2.weights.h5"], out
    left = _on_edge(secure_hosts, node_venv, notebook, _alice_env(secure_hosts), "left", name)
    assert left["live"] == [] and out["job_id"] not in left["staged"], left
