"""`devcluster up --no-gpus` without a cluster: the settings it writes (no yarn.io/gpu anywhere,
the gpu partition kept), what the readiness wait expects of the NodeManagers, the flag kept in
the cluster's state, and a running cluster of the other kind refused."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tony_jupyter_devcluster import DevCluster, DevClusterError, preflight, ready
from tony_jupyter_devcluster.cli import _cluster, _parser
from tony_jupyter_devcluster.config import (
    GPU_RESOURCE,
    NM2_GPUS,
    NM2_VCORES,
    NM_MEMORY_MB,
    NM_VCORES,
    Layout,
    write_config,
)


def _props(path: Path) -> dict[str, str]:
    root = ElementTree.parse(path).getroot()
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def test_a_cluster_without_gpus_declares_no_gpu_resource_and_keeps_the_gpu_partition(tmp_path):
    layout = Layout(tmp_path, gpus=False)
    write_config(layout, "someone", "/usr/bin")
    shared, nm1, nm2 = (
        _props(layout.conf / "yarn-site.xml"),
        _props(layout.nm_conf("nm1") / "yarn-site.xml"),
        _props(layout.nm_conf("nm2") / "yarn-site.xml"),
    )
    for props in (shared, nm1, nm2):
        assert "yarn.resource-types" not in props
        assert not [key for key in props if GPU_RESOURCE in key]
    assert nm2["yarn.nodemanager.node-labels.provider.configured-node-partition"] == "gpu"
    assert nm2["yarn.nodemanager.resource.cpu-vcores"] == str(NM2_VCORES)

    write_config(Layout(tmp_path), "someone", "/usr/bin")  # the default, in the same dir
    shared, nm2 = (
        _props(layout.conf / "yarn-site.xml"),
        _props(layout.nm_conf("nm2") / "yarn-site.xml"),
    )
    assert shared["yarn.resource-types"] == GPU_RESOURCE
    assert shared[f"yarn.resource-types.{GPU_RESOURCE}.maximum-allocation"] == str(NM2_GPUS)
    assert nm2[f"yarn.nodemanager.resource-type.{GPU_RESOURCE}"] == str(NM2_GPUS)
    assert f"yarn.nodemanager.resource-type.{GPU_RESOURCE}" not in _props(
        layout.nm_conf("nm1") / "yarn-site.xml"
    )


class _Nodes:
    """The RM's /ws/v1/cluster/nodes answer: nm1 plain, nm2 labelled gpu with ``gpus``."""

    def __init__(self, gpus: int | None):
        gpu = [{"name": GPU_RESOURCE, "value": gpus}] if gpus is not None else []
        self.nodes = [
            {"id": "127.0.0.1:8041", "state": "RUNNING", "totalResource": _total(NM_VCORES, [])},
            {
                "id": "127.0.0.1:8141",
                "state": "RUNNING",
                "nodeLabels": ["gpu"],
                "totalResource": _total(NM2_VCORES, gpu),
            },
        ]

    def get(self, url, timeout):
        assert url.endswith("/ws/v1/cluster/nodes")
        return self

    def raise_for_status(self):
        pass

    def json(self):
        return {"nodes": {"node": self.nodes}}


def _total(vcores: int, infos: list) -> dict:
    return {
        "memory": NM_MEMORY_MB,
        "vCores": vcores,
        "resourceInformations": {"resourceInformation": infos},
    }


def test_the_readiness_wait_expects_the_gpus_the_cluster_declares():
    ports = {"nm1": 8041, "nm2": 8141}
    assert ready.yarn_pending("http://rm", ports, _Nodes(NM2_GPUS)) == []
    assert ready.yarn_pending("http://rm", ports, _Nodes(None), gpus=False) == []
    assert ready.yarn_pending("http://rm", ports, _Nodes(None)) == [
        f"nm2 resources (memory, vcores, gpus) = ({NM_MEMORY_MB}, {NM2_VCORES}, 0)"
    ]
    assert ready.yarn_pending("http://rm", ports, _Nodes(NM2_GPUS), gpus=False) == [
        f"nm2 resources (memory, vcores, gpus) = ({NM_MEMORY_MB}, {NM2_VCORES}, {NM2_GPUS})"
    ]


def test_the_flag_is_kept_in_the_clusters_state_and_read_back(tmp_path):
    root = tmp_path / "dc"
    assert DevCluster(root).layout.gpus  # a new cluster: with GPUs, as before
    args = _parser().parse_args(["up", "--dir", str(root), "--no-gpus"])
    assert not _cluster(args).layout.gpus
    root.mkdir()
    (root / "cluster.json").write_text(json.dumps({"port_offset": 0, "gpus": False}))
    assert not DevCluster(root).layout.gpus  # `down`, `wait`, `env`: as it was started
    assert DevCluster(root, gpus=True).layout.gpus
    (root / "cluster.json").write_text(json.dumps({"port_offset": 0}))  # started before the flag
    assert DevCluster(root).layout.gpus


@pytest.mark.parametrize(
    "running,wanted,message",
    [
        (True, False, "is already running with GPUs on nm2"),
        (False, True, "is already running without GPUs (--no-gpus)"),
    ],
)
def test_a_running_cluster_with_the_other_gpus_is_refused(tmp_path, running, wanted, message):
    state = {"port_offset": 0, "security": None, "gpus": running}
    same = {"port_offset": 0, "hosts": False, "security": None, "tls": False, "gpus": running}
    preflight.check_same_cluster(tmp_path, state, same)
    with pytest.raises(DevClusterError) as err:
        preflight.check_same_cluster(tmp_path, state, {**same, "gpus": wanted})
    assert f"The devcluster in {tmp_path} {message}" in str(err.value)
    assert "`tony-jupyter devcluster down` first" in str(err.value)
