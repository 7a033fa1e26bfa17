"""The devcluster's CapacityScheduler queues: ``default`` on nm1, ``gpu`` on nm2's partition."""

from __future__ import annotations

# nm2's partition (yarn-site of nm2, config.py) and the queue that may use it.
GPU_LABEL = "gpu"


def capacity_scheduler() -> dict[str, object]:
    q = "yarn.scheduler.capacity.root"
    return {
        # The default calculator counts memory only and would ignore vcores and GPUs.
        "yarn.scheduler.capacity.resource-calculator": (
            "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
        ),
        # Default 0.1: with one AM per job a second job would sit in ACCEPTED.
        "yarn.scheduler.capacity.maximum-am-resource-percent": 0.5,
        "yarn.scheduler.capacity.node-locality-delay": -1,
        f"{q}.queues": "default,gpu",
        f"{q}.accessible-node-labels.{GPU_LABEL}.capacity": 100,
        f"{q}.default.capacity": 50,
        f"{q}.default.maximum-capacity": 100,
        # One user (the usual case here) may fill the queue's maximum, not just its share.
        f"{q}.default.user-limit-factor": 100,
        # A single space: no labels, so `default` never sees nm2's partition.
        f"{q}.default.accessible-node-labels": " ",
        f"{q}.gpu.capacity": 50,
        f"{q}.gpu.maximum-capacity": 100,
        f"{q}.gpu.user-limit-factor": 100,
        f"{q}.gpu.accessible-node-labels": GPU_LABEL,
        f"{q}.gpu.accessible-node-labels.{GPU_LABEL}.capacity": 100,
        f"{q}.gpu.accessible-node-labels.{GPU_LABEL}.maximum-capacity": 100,
        f"{q}.gpu.default-node-label-expression": GPU_LABEL,
    }
