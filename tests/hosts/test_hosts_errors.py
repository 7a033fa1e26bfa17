"""Error paths of the several-host devcluster that need no daemon: not root, a crashed `up`'s
leftovers, `exec` (and `link`) to a host that does not exist or on a one-host cluster. Each
checks the message and that nothing is left."""

from __future__ import annotations

import json
import subprocess
import time

import psutil
import pytest

from tony_jupyter_devcluster import DevCluster, netns
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.hosts import Hosts, Topology

pytestmark = pytest.mark.hosts


def test_up_hosts_without_root_says_why_and_makes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["up", "--hosts", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "`devcluster up --hosts` needs root" in err
    assert "uid 1000" in err and "sudo -E" in err
    assert list(tmp_path.iterdir()) == []
    assert netns.leftovers(Topology.for_dir(tmp_path)) == []


def test_exec_on_a_one_host_cluster_is_refused(tmp_path, capsys):
    assert main(["exec", "--dir", str(tmp_path), "edge", "--", "true"]) == 1
    assert "runs on this machine's own host, not on several" in capsys.readouterr().err


@pytest.mark.parametrize("ha", [False, True], ids=["hosts", "hosts-ha"])
def test_up_after_a_crash_clears_what_the_earlier_one_left(tmp_path, ha):
    """A crashed `up`: namespaces, links and a process on a host survive it. The next `up`
    (netns.create) removes them before making its own; `down` removes those. With --ha, the
    second master host's too."""
    plan = Hosts.plan(tmp_path, [tmp_path], ha=ha)
    topology = plan.topology
    netns.create(topology, len(plan.keep))
    try:
        left = subprocess.Popen(plan.command("worker1", ["sleep", "300"]), start_new_session=True)
        deadline = time.monotonic() + 10
        while left.pid not in netns.pids(f"{topology.prefix}-worker1"):
            assert time.monotonic() < deadline, "the sleep never entered worker1"
            time.sleep(0.05)
        # ... `up` crashes here; the next one starts:
        netns.create(topology, len(plan.keep))
        left.wait(timeout=10)  # killed (and reaped by netns.destroy, which waits for it)
        assert not psutil.pid_exists(left.pid)
        found = netns.leftovers(topology)
        assert sorted(x for x in found if x.startswith("netns ")) == [
            f"netns {topology.prefix}-{h}" for h in sorted(topology.names)
        ]
        assert not [x for x in found if x.startswith("process ")]
    finally:
        DevCluster(tmp_path).down()
    assert netns.leftovers(topology) == []
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if topology.prefix in " ".join(p.info["cmdline"] or [])
    ]


def test_exec_without_root_says_why(tmp_path, monkeypatch, capsys):
    plan = Hosts.plan(tmp_path, [tmp_path])
    (tmp_path / "cluster.json").write_text(json.dumps({"hosts": plan.to_json()}))
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["exec", "--dir", str(tmp_path), "edge", "--", "true"]) == 1
    err = capsys.readouterr().err
    assert "`devcluster exec` needs root" in err and "uid 1000" in err
    assert netns.leftovers(plan.topology) == []


def test_link_without_root_or_to_a_host_that_is_not_up_says_why(tmp_path, monkeypatch, capsys):
    assert main(["link", "--dir", str(tmp_path), "worker2", "down"]) == 1
    assert "runs on this machine's own host, not on several" in capsys.readouterr().err
    plan = Hosts.plan(tmp_path, [tmp_path])
    (tmp_path / "cluster.json").write_text(json.dumps({"hosts": plan.to_json()}))
    assert main(["link", "--dir", str(tmp_path), "worker2", "down"]) == 1  # never started
    assert f"Host worker2 is not up (no namespace {plan.topology.prefix}-worker2)" in (
        capsys.readouterr().err
    )
    assert main(["link", "--dir", str(tmp_path), "worker9", "up"]) == 1
    assert "No host named 'worker9'" in capsys.readouterr().err
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["link", "--dir", str(tmp_path), "worker2", "down"]) == 1
    err = capsys.readouterr().err
    assert "`devcluster link` needs root" in err and "uid 1000" in err
    assert netns.leftovers(plan.topology) == []


def test_failover_or_wait_on_hosts_that_are_not_up_says_so_and_kills_nothing(tmp_path, capsys):
    """`failover` on an `up --hosts --ha` cluster asks the masters from the edge; with no edge
    (the hosts down, or a crashed `up`) it says so before it looks for a master to kill, and
    makes nothing."""
    plan = Hosts.plan(tmp_path, [tmp_path], ha=True)
    state = {"hosts": plan.to_json(), "ha": True}
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    assert main(["failover", "nn", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "are not up (no namespace" in err and "up --hosts --ha" in err, err
    assert "nothing to fail over" in err
    # `wait` too asks from the edge, never from the machine's own namespace
    assert main(["wait", "--dir", str(tmp_path), "--timeout", "5"]) == 1
    assert "nothing to wait for" in capsys.readouterr().err
    assert netns.leftovers(plan.topology) == []
    # `status` answers without asking anyone: nothing runs
    assert main(["status", "--dir", str(tmp_path)]) == 3
    assert "master2" in capsys.readouterr().out
