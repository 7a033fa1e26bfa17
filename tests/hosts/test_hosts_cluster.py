"""`devcluster up --hosts`: edge, master, worker1 and worker2 as network and mount namespaces,
with their own names and addresses, workers that see none of the edge's files, a private
network the edge cannot reach, and a `down` that leaves nothing behind."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from conftest import on  # tests/hosts/conftest.py

from tony_jupyter_devcluster import netns, process
from tony_jupyter_devcluster.hosts import HOST_NAMES

pytestmark = pytest.mark.hosts
PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"  # the nodes' own
ADDRESSES = {
    "edge": "198.18.0.10",
    "master": "198.18.0.11",
    "worker1": "198.18.0.21",
    "worker2": "198.18.0.22",
    "worker3": "198.18.0.23",
}
_CONNECT = """
import socket, sys
s = socket.socket()
s.settimeout(5)
print(s.connect_ex((sys.argv[1], int(sys.argv[2]))))
"""


def test_each_host_has_its_name_and_address_and_resolves_the_others(hosts_cluster):
    for host in HOST_NAMES:
        res = on(hosts_cluster, host, "sh", "-c", "hostname; getent hosts " + " ".join(HOST_NAMES))
        assert res.returncode == 0, res.stderr
        lines = res.stdout.split("\n")
        assert lines[0] == host
        resolved = {line.split()[1]: line.split()[0] for line in lines[1:] if line.strip()}
        assert resolved == ADDRESSES, (host, resolved)
        addr = on(hosts_cluster, host, "ip", "-o", "-4", "addr", "show", "dev", "eth0")
        assert f"inet {ADDRESSES[host]}/24" in addr.stdout, addr.stdout
    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "tony_jupyter_devcluster",
            "status",
            "--dir",
            str(hosts_cluster.dir),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    for host, address in ADDRESSES.items():
        assert any(
            line.split()[:1] == [host] and address in line for line in status.stdout.split("\n")
        )
    assert "198.19.0.22" in status.stdout


def test_the_machine_itself_is_on_no_host_network(hosts_cluster):
    topology = hosts_cluster.hosts.topology
    for bridge in (topology.bridge, topology.private_bridge):
        shown = subprocess.run(
            ["ip", "-o", "addr", "show", "dev", bridge], capture_output=True, text=True
        )
        assert shown.returncode == 0, shown.stderr
        assert "inet " not in shown.stdout, shown.stdout


def test_only_workers_share_the_private_network(hosts_cluster):
    nm1 = hosts_cluster.layout.ports("nm1")["rpc"]
    private = "198.19.0.21"

    def connect(host: str, address: str) -> int:
        res = on(hosts_cluster, host, "/usr/bin/python3", "-c", _CONNECT, address, str(nm1))
        assert res.returncode == 0, res.stderr
        return int(res.stdout.strip())

    # The NodeManager answers on worker1's bridge address, from the edge.
    assert connect("edge", ADDRESSES["worker1"]) == 0
    # The edge has no way to worker1's second interface; worker2 does (nothing listens there).
    assert connect("edge", private) == errno.ENETUNREACH
    assert connect("worker2", private) == errno.ECONNREFUSED


def test_workers_see_none_of_the_edges_files(hosts_cluster, tmp_path):
    marker = f"tony-hosts-{uuid.uuid4().hex[:8]}"
    files = [tmp_path / marker, Path.home() / f".{marker}", Path.cwd() / f".{marker}"]
    checkout = Path(__file__).resolve().parents[2]
    venv_python = Path(sys.executable)
    try:
        for f in files:
            f.write_text("the edge's\n")
        paths = " ".join(map(str, [*files, venv_python]))
        probe = (
            f"for f in {paths}; do test -e $f && echo HAS $f; done; ls -A {checkout} | wc -l; "
            f"command -v {PYTHON}; {PYTHON} -c 'import tony_jupyter' 2>&1 | tail -1"
        )
        seen = on(hosts_cluster, "edge", "sh", "-c", probe)
        # On the edge, everything is there: the check below can fail.
        assert seen.stdout.count("HAS ") == len(files) + 1, seen.stdout
        for host in ("master", "worker1", "worker2"):
            res = on(hosts_cluster, host, "sh", "-c", probe)
            assert "HAS " not in res.stdout, (host, res.stdout)
            count, python, imported = res.stdout.strip().split("\n")
            assert count == "0", (host, res.stdout)  # the checkout: an empty tmpfs
            assert python == str(hosts_cluster.hosts.python)
            assert "ModuleNotFoundError" in imported, imported
    finally:
        for f in files:
            f.unlink(missing_ok=True)


_USABLE = """
import json, os, requests
rm, nn = os.environ["TONY_DEVCLUSTER_RM_URL"], os.environ["TONY_DEVCLUSTER_WEBHDFS_URL"]
nodes = requests.get(f"{rm}/ws/v1/cluster/nodes", params={"user.name": "root"}, timeout=10)
labels = lambda n: n.get("nodeLabels") if isinstance(n.get("nodeLabels"), list) else (
    [n["nodeLabels"]] if n.get("nodeLabels") else [])  # Jersey 1 and 2 differ
info = requests.get(f"{nn}/jmx", params={"qry": "Hadoop:service=NameNode,name=NameNodeInfo"},
                    timeout=10).json()["beans"][0]
print(json.dumps({
    "nodes": {n["id"]: [n["state"], labels(n)] for n in nodes.json()["nodes"]["node"]},
    "datanodes": sorted(v["infoAddr"] for v in json.loads(info["LiveNodes"]).values()),
}))
"""


def test_the_cluster_serves_the_edge_by_host_name(hosts_cluster):
    res = on(hosts_cluster, "edge", sys.executable, "-c", _USABLE)
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout)
    assert seen["nodes"] == {
        "worker1:8041": ["RUNNING", []],
        "worker2:8141": ["RUNNING", ["gpu"]],
        "worker3:8241": ["RUNNING", ["gpu"]],
    }
    assert [a.split(":")[0] for a in seen["datanodes"]] == [
        ADDRESSES["worker1"],
        ADDRESSES["worker2"],
        ADDRESSES["worker3"],
    ]


def test_exec_to_an_unknown_host_is_refused(hosts_cluster):
    before = netns.leftovers(hosts_cluster.hosts.topology)
    res = on(hosts_cluster, "nowhere", "true")
    assert res.returncode == 1
    assert "No host named 'nowhere'" in res.stderr
    assert "edge, master, worker1, worker2" in res.stderr
    assert netns.leftovers(hosts_cluster.hosts.topology) == before


def _devcluster(cluster, *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", argv[0], "--dir", str(cluster.dir)]
    return subprocess.run([*cmd, *argv[1:]], capture_output=True, text=True, check=False)


def test_link_down_cuts_a_host_off_and_up_plugs_it_back_in(hosts_cluster):
    nm2 = hosts_cluster.layout.ports("nm2")["rpc"]

    def connect(host: str, address: str) -> int:
        res = on(hosts_cluster, host, "/usr/bin/python3", "-c", _CONNECT, address, str(nm2))
        assert res.returncode == 0, res.stderr
        return int(res.stdout.strip())

    assert connect("edge", ADDRESSES["worker2"]) == 0
    cut = _devcluster(hosts_cluster, "link", "worker2", "down")
    try:
        assert cut.returncode == 0, cut.stderr
        assert cut.stdout.startswith("worker2: link down"), cut.stdout
        # Neither bridge reaches it (a connect that times out: errno EAGAIN / EINPROGRESS);
        # the NodeManager runs on, and answers on worker2 itself.
        assert connect("edge", ADDRESSES["worker2"]) in (errno.EAGAIN, errno.EHOSTUNREACH)
        assert connect("worker1", "198.19.0.22") in (errno.EAGAIN, errno.EHOSTUNREACH)
        assert connect("worker2", ADDRESSES["worker2"]) == 0
    finally:
        back = _devcluster(hosts_cluster, "link", "worker2", "up")
    assert back.returncode == 0, back.stderr
    assert connect("edge", ADDRESSES["worker2"]) == 0
    wrong = _devcluster(hosts_cluster, "link", "worker4", "down")
    assert wrong.returncode == 1 and "No host named 'worker4'" in wrong.stderr


def test_down_removes_every_namespace_link_mount_and_process(hosts_cluster):
    """Last of the tests on the session's several-host cluster (conftest.py orders them): it
    stops the cluster."""
    if not hosts_cluster.owned:
        pytest.skip("the several-host cluster was started outside this session; left running")
    topology = hosts_cluster.hosts.topology
    in_namespaces = [pid for ns in netns.namespaces(topology) for pid in netns.pids(ns)]
    daemons = [
        process.live_process(hosts_cluster.layout.pid_file(n))
        for n in hosts_cluster.layout.service_names
    ]
    assert all(daemons) and set(p.pid for p in daemons) <= set(in_namespaces)
    hosts_cluster.down()
    assert netns.leftovers(topology) == []
    assert not [
        pid
        for pid in in_namespaces
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert not [
        line
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if str(topology.run_dir) in line
    ]
