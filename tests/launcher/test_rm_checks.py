"""RMClient.check against a cluster's REST answers (the RM's own shapes, trimmed): containers no
node could ever hold, a label no node carries, GPUs where no node offers yarn.io/gpu. The real
cases run on the devcluster (tests/yarn/test_yarn_backend.py)."""

from __future__ import annotations

import pytest

from tony_jupyter.core.errors import SpecError
from tony_jupyter.core.hadoopconf import Address
from tony_jupyter.core.spec import JobSpec, TaskSpec
from tony_jupyter.launcher.yarn.rm import GPU, RMClient


def resource(mb: int, vcores: int, gpus: int | None = None) -> dict:
    out: dict = {"memory": mb, "vCores": vcores}
    if gpus is not None:
        out["resourceInformations"] = {"resourceInformation": [{"name": GPU, "value": gpus}]}
    return out


def node(nid: str, mb: int, vcores: int, gpus: int | None = None, label: str = "") -> dict:
    n = {"id": nid, "state": "RUNNING", "totalResource": resource(mb, vcores, gpus)}
    if label:
        n["nodeLabels"] = [label]
    return n


def queue(name: str, labels=(), mb=16384, vcores=16, gpus: int | None = 8) -> dict:
    return {
        "queueName": name,
        "queuePath": f"root.{name}",
        "state": "RUNNING",
        "nodeLabels": list(labels),
        "maximumAllocation": resource(mb, vcores, gpus),
    }


class Answer:
    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class FakeRM(RMClient):
    """The RM's answers from dicts; asking anything else (new-application) fails the test."""

    def __init__(self, nodes, queues, labels=()):
        super().__init__(Address("http://rm.invalid:8088", "a test"), "tester")
        self.answers = {
            "/nodes": {"nodes": {"node": nodes}},
            "/scheduler": {"scheduler": {"schedulerInfo": {"queues": {"queue": queues}}}},
            "/get-node-labels": {"nodeLabelInfo": [{"name": x} for x in labels]},
        }

    def _request(self, method, path, ok=(200,), **kw):
        assert method == "GET", f"{method} {path}: a check must create nothing"
        return Answer(self.answers[path])


def job(memory_mb=1024, vcores=1, gpus=0, label=None, queue="default") -> JobSpec:
    task = TaskSpec("worker", 1, memory_mb, vcores, gpus, label)
    return JobSpec(name="checked", tasks=(task,), queue=queue, am_memory_mb=512)


CLUSTER = dict(
    nodes=[node("a:1", 4096, 4, 0), node("b:1", 8192, 8, 0), node("g:1", 8192, 8, 2, "gpu")],
    queues=[queue("default"), queue("gpu", labels=["gpu"])],
    labels=["gpu", "spare"],
)


def test_a_container_larger_than_every_node_is_refused_with_the_largest_node():
    rm = FakeRM(**CLUSTER)
    rm.check(job(memory_mb=8192, vcores=8))  # fits b:1 exactly
    with pytest.raises(SpecError) as e:
        rm.check(job(memory_mb=8192, vcores=9))  # within maximumAllocation, above every node
    msg = str(e.value)
    assert "worker tasks ask for 8192 MB, 9 vcores, 0 GPUs each" in msg
    assert "no node of the default partition (no node label) has that much" in msg
    assert "the largest, b:1: 8192 MB, 8 vcores, 0 GPUs" in msg
    assert "Lower --memory / --vcores / --gpus" in msg


def test_no_node_fits_all_of_one_container_though_each_part_fits_some_node():
    rm = FakeRM(
        nodes=[node("big-mem:1", 16384, 2), node("many-cores:1", 2048, 16)],
        queues=[queue("default")],
    )
    with pytest.raises(SpecError, match="no node of the default partition"):
        rm.check(job(memory_mb=4096, vcores=4))


def test_a_label_no_node_carries_is_refused_naming_the_labels_that_have_nodes():
    rm = FakeRM(**{**CLUSTER, "queues": [queue("default"), queue("any", labels=["*"])]})
    with pytest.raises(SpecError) as e:
        rm.check(job(label="spare", queue="any"))
    msg = str(e.value)
    assert "no node carries node label 'spare'" in msg
    assert "(labels nodes carry: gpu)" in msg


def test_gpus_on_a_cluster_without_yarn_io_gpu_are_refused_with_the_reason():
    rm = FakeRM(
        nodes=[node("a:1", 8192, 8), node("b:1", 8192, 8)],
        queues=[queue("default", gpus=None)],
    )
    with pytest.raises(SpecError) as e:
        rm.check(job(gpus=1))
    msg = str(e.value)
    assert "no node of this cluster offers yarn.io/gpu" in msg
    assert "none of its 2 NodeManagers declares it" in msg
    assert "Drop --gpus" in msg


def test_gpus_in_a_partition_without_them_name_where_the_gpus_are():
    rm = FakeRM(**CLUSTER)
    with pytest.raises(SpecError) as e:
        rm.check(job(gpus=1))
    assert "partition 'gpu' has 2 GPUs: add --node-label gpu --queue gpu" in str(e.value)
    rm.check(job(gpus=2, label="gpu", queue="gpu"))


def test_nodes_out_of_service_do_not_count():
    gone = {**node("b:1", 8192, 8), "state": "DECOMMISSIONED"}
    rm = FakeRM(nodes=[node("a:1", 4096, 4), gone], queues=[queue("default")])
    with pytest.raises(SpecError, match="the largest, a:1: 4096 MB"):
        rm.check(job(memory_mb=8192))
