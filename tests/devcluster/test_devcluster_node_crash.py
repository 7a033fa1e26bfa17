"""A simulated node crash: `DevCluster.restart_node` kills a NodeManager with its containers and
starts it again; the RM then ends what ran there, and the node takes work again."""

from __future__ import annotations

import time

import psutil
import pytest
from devcluster_ds import container_dirs, submit, wait_end

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.errors import DevClusterError
from tony_jupyter_devcluster.testing import started_by_fixture


def _sleeping(nm: psutil.Process) -> bool:
    """Whether a container of ``nm`` runs the shell command ``sleep 300`` yet."""
    for p in nm.children(recursive=True):
        try:
            if p.cmdline() == ["sleep", "300"]:
                return True
        except psutil.Error:
            pass
    return False


def test_unknown_or_stopped_node_is_refused(tmp_path) -> None:
    cluster = DevCluster(tmp_path, port_offset=0)  # never started: no daemon to touch
    with pytest.raises(DevClusterError, match="No NodeManager named 'namenode'.*nm1, nm2"):
        cluster.kill_node("namenode")
    with pytest.raises(DevClusterError, match="No NodeManager named 'nm3'"):
        cluster.start_node("nm3")
    with pytest.raises(DevClusterError, match="nm1 is not running in"):
        cluster.kill_node("nm1")


@pytest.mark.yarn
def test_restart_node_kills_its_containers_and_the_rm_ends_their_app(
    devcluster: DevCluster, tmp_path
) -> None:
    if not started_by_fixture(devcluster):
        pytest.skip(f"the devcluster in {devcluster.dir} was already running; not crashing it")
    app_id = submit(devcluster, tmp_path, "sleep 300")  # AM and container on nm1
    before = {row["service"]: row["pid"] for row in devcluster.status()}
    nm1 = psutil.Process(before["nm1"])
    deadline = time.monotonic() + 180
    while not _sleeping(nm1):
        assert time.monotonic() < deadline, "the sleep container never started on nm1"
        time.sleep(0.2)
    assert len(container_dirs(devcluster, app_id)) == 2  # the AM's and the sleep's
    family = [nm1, *nm1.children(recursive=True)]

    killed = devcluster.restart_node("nm1")

    assert {p.pid for p in family} <= set(killed)
    gone, alive = psutil.wait_procs(family, timeout=5)
    assert not alive
    after = {row["service"]: row["pid"] for row in devcluster.status()}
    assert after["nm1"] != before["nm1"]
    assert {k: v for k, v in after.items() if k != "nm1"} == {
        k: v for k, v in before.items() if k != "nm1"
    }  # nothing else was touched
    assert devcluster.is_running()
    # The restarted NM reports no containers (no NM recovery): the AM's is lost with its node.
    app = wait_end(devcluster, app_id, timeout=120)
    assert app["state"] == "FAILED", app
    # The node runs containers again.
    again = submit(devcluster, tmp_path, "true")
    assert wait_end(devcluster, again)["finalStatus"] == "SUCCEEDED"
