"""The several-host devcluster's plan (hosts.py), without root or namespaces: names, addresses,
the hidden paths, and the command that runs a program on a host."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

import pytest

from tony_jupyter_devcluster import DevCluster, DevClusterError
from tony_jupyter_devcluster.config import Layout, write_config
from tony_jupyter_devcluster.hosts import HOST_NAMES, MASTER2, Hosts, Topology, hidden_paths

TESTS_NET = ipaddress.ip_network("198.18.0.0/15")


def test_every_address_is_in_the_network_test_range_and_names_fit_linux():
    topology = Topology.for_dir(Path("/some/cluster"))
    assert Topology.for_dir(Path("/some/cluster")) == topology != Topology.for_dir(Path("/x"))
    addresses = [h.address for h in topology.hosts]
    addresses += [h.private_address for h in topology.hosts if h.private_address]
    assert len(set(addresses)) == 8
    assert all(ipaddress.ip_address(a) in TESTS_NET for a in addresses)
    # The edge is on no private network; each worker is.
    workers = ["worker1", "worker2", "worker3"]
    assert [h.name for h in topology.hosts if h.private_address] == workers
    links = [topology.bridge, topology.private_bridge]
    links += [topology.veth(h, p) for h in topology.hosts for p in (False, True)]
    assert len(set(links)) == len(links) and max(map(len, links)) <= 15  # IFNAMSIZ - 1
    hosts_file = topology.hosts_file()
    for host in topology.hosts:
        assert f"{host.address}\t{host.name}\n" in hosts_file


def test_ha_adds_master2_for_the_second_of_each_pair(tmp_path):
    topology = Topology.for_dir(Path("/some/cluster"), ha=True)
    assert topology.prefix == Topology.for_dir(Path("/some/cluster")).prefix  # one cluster
    assert topology.names == (*HOST_NAMES, MASTER2)
    addresses = [h.address for h in topology.hosts]
    assert len(set(addresses)) == 6 and ipaddress.ip_address(addresses[-1]) in TESTS_NET
    links = [topology.veth(h, p) for h in topology.hosts for p in (False, True)]
    assert len(set(links)) == len(links) and max(map(len, links)) <= 15
    assert f"{topology.host(MASTER2).address}\t{MASTER2}\n" in topology.hosts_file()
    layout = Layout(tmp_path, hosts=True, ha=True)
    write_config(layout, "someone", "/usr/bin")
    hdfs = (layout.conf / "hdfs-site.xml").read_text()
    yarn = (layout.conf / "yarn-site.xml").read_text()
    assert "<value>master:8020</value>" in hdfs and "<value>master2:8120</value>" in hdfs
    assert (
        "<value>master2:8132</value>" in yarn
        and "clientPortAddress=master\n" in (layout.conf / "zoo.cfg").read_text()
    )
    assert {layout.host_of(s) for s in ("namenode2", "resourcemanager2")} == {MASTER2}
    plan = Hosts(topology, (Path("/tmp"),), (tmp_path,), Path("/usr/bin/python3"))
    assert Hosts.from_json(plan.to_json()) == plan
    assert plan.command(MASTER2, ["true"])[3] == f"{topology.prefix}-{MASTER2}"
    with pytest.raises(DevClusterError, match="No host named 'master2'"):
        Hosts(Topology("abc123"), (), (), Path("/usr/bin/python3")).host(MASTER2)


def test_hidden_paths_cover_the_edges_files_but_no_system_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inner = tmp_path / "inner"
    inner.mkdir()
    hidden = hidden_paths([inner, Path("/usr"), Path("/")])
    assert Path("/tmp") in hidden and Path.home() in hidden
    assert inner not in hidden and tmp_path not in hidden  # under /tmp: the outer mount hides them
    assert Path("/usr") not in hidden and Path("/") not in hidden


def test_a_worker_hides_the_edge_and_binds_the_cluster_back(tmp_path):
    plan = Hosts(
        Topology("abc123"),
        (Path("/tmp"), Path("/root")),
        (tmp_path, Path("/opt/jars")),
        Path("/usr/bin/python3"),
    )
    worker = plan.command("worker1", ["java", "-version"])
    assert worker[:4] == ["ip", "netns", "exec", "tjabc123-worker1"]
    assert worker[-3:] == ["sh", "java", "-version"]
    script = worker[worker.index("-c") + 1]
    # Only the kept dir under a hidden path is carried past the tmpfs mounts.
    assert script.index(f"mount --bind {tmp_path} ") < script.index("mount -t tmpfs")
    assert f"mount --move /run/tony-jupyter/tjabc123/keep/0 {tmp_path}" in script
    assert "/opt/jars" not in script and "hostname worker1" in script
    edge_script = plan.command("edge", ["true"])[plan.command("edge", ["true"]).index("-c") + 1]
    assert "tmpfs" not in edge_script and "hostname edge" in edge_script
    with pytest.raises(DevClusterError, match="No host named 'gateway'.*edge, master, worker1"):
        plan.command("gateway", ["true"])


def test_the_script_a_host_runs_is_valid_shell(tmp_path):
    plan = Hosts(
        Topology("abc123"), (Path("/tmp"),), (tmp_path / "a dir",), Path("/usr/bin/python3")
    )
    script = plan.command("worker2", ["true"])
    script = script[script.index("-c") + 1]
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0


def test_each_daemon_binds_its_own_host(tmp_path):
    layout = Layout(tmp_path, hosts=True)
    write_config(layout, "someone", "/usr/bin")
    core = (layout.conf / "core-site.xml").read_text()
    yarn = (layout.conf / "yarn-site.xml").read_text()
    assert "hdfs://master:8020" in core and "<value>master:8032</value>" in yarn
    for nm, host in (("nm1", "worker1"), ("nm2", "worker2"), ("nm3", "worker3")):
        assert (
            f"<value>{host}:{layout.ports(nm)['rpc']}</value>"
            in (layout.nm_conf(nm) / "yarn-site.xml").read_text()
        )
    # worker3 is worker2's twin in the gpu partition; two copies of every block on HDFS.
    nm3 = (layout.nm_conf("nm3") / "yarn-site.xml").read_text()
    assert "<value>gpu</value>" in nm3
    assert (
        "<name>dfs.replication</name><value>2</value>"
        in (layout.conf / "hdfs-site.xml").read_text()
    )
    assert layout.service_names[-3:] == ("datanode2", "nm3", "datanode3")
    one_host = Layout(tmp_path)
    assert not {"datanode2", "nm3", "datanode3"} & set(one_host.service_names)
    assert one_host.nodemanagers == ("nm1", "nm2")
    assert set(HOST_NAMES) == {"edge", "master", "worker1", "worker2", "worker3"}


def test_a_one_host_cluster_keeps_127_0_0_1(tmp_path):
    cluster = DevCluster(tmp_path, port_offset=0, security=False, hosts=False)
    assert cluster.rm_url == "http://127.0.0.1:8088"
    assert cluster.hosts is None
