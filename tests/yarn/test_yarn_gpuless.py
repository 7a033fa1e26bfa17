"""A GPU request on a cluster where no node offers yarn.io/gpu (`devcluster up --no-gpus`, a
cluster of this module's own beside the plain one): refused before anything is submitted, with
the reason, leaving nothing behind."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from helpers.leftovers import live_apps, wait_nothing_left
from IPython.core.error import UsageError

from tony_jupyter.launcher.client import list_jobs
from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.ready import resource_value
from tony_jupyter_devcluster.testing import start_devcluster

pytestmark = pytest.mark.yarn
RUN = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def yarn_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """This module's jobs go to a devcluster without GPUs (tests/yarn/conftest.py's tony_home
    and the ``cluster`` view read this fixture), not the session's plain one."""
    dc = start_devcluster(tmp_path_factory.mktemp("gpuless-devcluster"), gpus=False)
    try:
        yield dc
    finally:
        dc.down()


@pytest.mark.parametrize("flags", ["--gpus 1", "--gpus 1 --node-label gpu --queue gpu"])
def test_a_gpu_request_is_refused_with_the_reason_before_submitting(
    shell, tony_home, cluster, flags
):
    nodes = cluster.http.get(f"{cluster.rm}/ws/v1/cluster/nodes", timeout=10).json()
    node_list = nodes["nodes"]["node"]
    assert len(node_list) == 2 and all(n["state"] == "RUNNING" for n in node_list)
    assert [resource_value(n["totalResource"], "yarn.io/gpu") for n in node_list] == [0, 0]
    name = f"gpuless-{RUN}"
    before, staging_before = len(cluster.apps()), set(cluster.staging())
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", f"--backend yarn {flags} --name {name}", "1")
    message = str(e.value)
    assert "the job asks for 1 GPUs per task (--gpus / tony.<type>.gpus)" in message
    assert "no node of this cluster offers yarn.io/gpu" in message
    assert "none of its 2 NodeManagers declares it" in message
    assert "Drop --gpus, or use a cluster with GPU nodes" in message
    assert len(cluster.apps()) == before  # not even an application id was used for an app
    wait_nothing_left(
        0,  # at once: a refused submission leaves nothing to clean up later
        jobs=list_jobs,
        apps=lambda: live_apps(cluster.apps(name)),
        staging=lambda: sorted(set(cluster.staging()) - staging_before),
    )
