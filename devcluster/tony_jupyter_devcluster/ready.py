"""Readiness probes: each returns what is not ready yet ([] when usable), never raises on a
daemon that is still starting.

``http`` is the ``requests`` module or a session (a secure cluster's authenticates with SPNEGO);
``user`` goes out as ``user.name``, which only a cluster without Kerberos reads (None: none).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from .config import GPU_LABEL, GPU_NODEMANAGERS, GPU_RESOURCE, nm_resources
from .errors import DevClusterError

_TIMEOUT = 5.0
_PROBE_PATH = "/tmp/.tony-devcluster-ready"


def _as_list(value: object) -> list:
    """Jersey 2 (Hadoop 3.5) and Jersey 1 differ on one-element lists; accept both shapes."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def resource_value(total: dict, name: str) -> int:
    infos = _as_list((total.get("resourceInformations") or {}).get("resourceInformation"))
    for info in infos:
        if info.get("name") == name:
            return int(info.get("value", 0))
    return 0


def _as_user(user: str | None, **params: str) -> dict[str, str]:
    return {**params, "user.name": user} if user else params


def rm_nodes(rm_url: str, http: Any = requests) -> list[dict]:
    resp = http.get(f"{rm_url}/ws/v1/cluster/nodes", timeout=_TIMEOUT)
    resp.raise_for_status()
    return _as_list((resp.json().get("nodes") or {}).get("node"))


def node_labels(node: dict) -> list[str]:
    return [str(label) for label in _as_list(node.get("nodeLabels"))]


def ensure_gpu_label(rm_url: str, user: str | None, http: Any = requests) -> None:
    """Add the exclusive ``gpu`` partition to the cluster's label set (kept in the RM's fs store
    across restarts); nm2 reports it but the RM only accepts labels it already knows."""
    resp = http.get(f"{rm_url}/ws/v1/cluster/get-node-labels", timeout=_TIMEOUT)
    resp.raise_for_status()
    body = resp.json() or {}
    known = [info.get("name") for info in _as_list(body.get("nodeLabelInfo"))]
    if GPU_LABEL in known:
        return
    resp = http.post(
        f"{rm_url}/ws/v1/cluster/add-node-labels",
        params=_as_user(user),
        json={"nodeLabelInfo": [{"name": GPU_LABEL, "exclusivity": True}]},
        timeout=_TIMEOUT,
    )
    resp.raise_for_status()


def yarn_pending(
    rm_url: str, nm_rpc_ports: dict[str, int], http: Any = requests, gpus: bool = True
) -> list[str]:
    """Every NM RUNNING with the declared resources and labels; ``nm_rpc_ports`` names each
    NM's port, the part of its NodeId that tells them apart; ``gpus``: whether the cluster
    declares GPUs (`up --no-gpus`: none)."""
    try:
        nodes = rm_nodes(rm_url, http)
    except (requests.RequestException, ValueError):
        return ["ResourceManager REST API"]
    by_port = {int(str(n.get("id", ":0")).rsplit(":", 1)[-1]): n for n in nodes}
    pending = []
    for nm, port in nm_rpc_ports.items():
        labels = [GPU_LABEL] if nm in GPU_NODEMANAGERS else []
        node = by_port.get(port)
        if node is None or node.get("state") != "RUNNING":
            state = "not registered" if node is None else node.get("state")
            pending.append(f"{nm} RUNNING (is {state})")
            continue
        total = node.get("totalResource") or {}
        have = (total.get("memory"), total.get("vCores"), resource_value(total, GPU_RESOURCE))
        if have != nm_resources(nm, gpus):
            pending.append(f"{nm} resources (memory, vcores, gpus) = {have}")
        if node_labels(node) != labels:
            pending.append(f"{nm} labels {labels} (has {node_labels(node)})")
    return pending


def hdfs_pending(
    webhdfs_url: str, user: str | None, http: Any = requests, datanodes: int = 1
) -> list[str]:
    """NameNode out of safe mode with ``datanodes`` live DataNodes, then a WebHDFS write + read
    round trip."""
    try:
        resp = http.get(
            f"{webhdfs_url}/jmx",
            params={"qry": "Hadoop:service=NameNode,name=NameNodeInfo"},
            timeout=_TIMEOUT,
        )
        resp.raise_for_status()
        info = resp.json()["beans"][0]
    except (requests.RequestException, ValueError, KeyError, IndexError):
        return ["NameNode web server"]
    if info.get("Safemode"):
        return ["NameNode out of safe mode"]
    try:
        live = len(json.loads(info.get("LiveNodes") or "{}"))
    except ValueError:
        live = 0
    if live < datanodes:
        return [f"{datanodes} live DataNode(s) (has {live})"]
    payload = b"tony-jupyter devcluster readiness probe\n"
    url = f"{webhdfs_url}/webhdfs/v1{_PROBE_PATH}"
    try:
        created = http.put(
            url,
            params=_as_user(user, op="CREATE", overwrite="true"),
            data=payload,
            timeout=_TIMEOUT,
        )
        created.raise_for_status()
        read = http.get(url, params=_as_user(user, op="OPEN"), timeout=_TIMEOUT)
        read.raise_for_status()
    except requests.RequestException as err:
        return [f"WebHDFS write+read ({err})"]
    if read.content != payload:
        return ["WebHDFS read back what was written"]
    return []


def wait_usable(
    rm_url: str,
    webhdfs_url: str,
    nm_rpc_ports: dict[str, int],
    http: Any,
    check_alive: Callable[[], None],
    timeout: float,
    logs: Path,
    datanodes: int = 1,
    gpus: bool = True,
) -> None:
    """Until YARN and HDFS are usable (the gpu label added first); ``check_alive`` raises when
    a daemon died, which no wait would mend; ``gpus`` as :func:`yarn_pending`'s."""
    deadline = time.monotonic() + timeout
    pending: list[str] = ["everything"]
    labelled = False
    while time.monotonic() < deadline:
        check_alive()
        if not labelled:
            try:
                ensure_gpu_label(rm_url, None, http)
                labelled = True
            except (requests.RequestException, ValueError):
                pass
        pending = (
            yarn_pending(rm_url, nm_rpc_ports, http, gpus) if labelled else ["ResourceManager"]
        )
        pending += hdfs_pending(webhdfs_url, None, http, datanodes)
        if not pending:
            return
        time.sleep(0.25)
    raise DevClusterError(
        f"The devcluster did not become usable in time; still waiting for: "
        f"{'; '.join(pending)}. The daemons' logs are in {logs} (and "
        "`tony-jupyter devcluster logs SERVICE`); everything started has been stopped. "
        "On a slow machine pass a longer --timeout."
    )
