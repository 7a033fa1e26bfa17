"""Submit Hadoop's distributed-shell AM through the RM REST API (new-application + submit),
the way a Python client without a JVM does, and find where its containers ran."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import requests

from tony_jupyter_devcluster import DevCluster

DS_AM = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"
TERMINAL = ("FINISHED", "FAILED", "KILLED")


def submit(
    cluster: DevCluster,
    work_dir: Path,
    shell_command: str,
    *,
    queue: str = "default",
    node_label: str | None = None,
    container_resources: str = "memory-mb=128,vcores=1",
    num_containers: int = 1,
    http: requests.Session | None = None,
) -> str:
    """Start a distributed-shell app running ``shell_command`` in each container; its app id.

    ``http`` submits as someone else (``cluster.session(user)``); by default, as this user."""
    http = http or cluster.session()
    # The AM reads its command from a localized file "shellCommands", written by the Java client
    # with DataOutputStream.writeUTF: a 2-byte big-endian length, then the bytes.
    command_file = work_dir / "shellCommands"
    data = shell_command.encode()
    command_file.write_bytes(struct.pack(">H", len(data)) + data)
    stat = command_file.stat()
    rm = cluster.rm_url
    resp = http.post(f"{rm}/ws/v1/cluster/apps/new-application", timeout=10)
    resp.raise_for_status()
    app_id = resp.json()["application-id"]
    am_command = " ".join(
        [
            "{{JAVA_HOME}}/bin/java",
            *cluster.jvm_flags,
            "-Xmx256m",
            DS_AM,
            "--container_memory 128 --container_vcores 1",
            f"--num_containers {num_containers}",
            f"--container_resources {container_resources}",
            "1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr",
        ]
    )
    body: dict = {
        "application-id": app_id,
        "application-name": "devcluster-test-ds",
        "application-type": "DEVCLUSTER-TEST",
        "queue": queue,
        "am-container-spec": {
            "local-resources": {
                "entry": [
                    {
                        "key": "shellCommands",
                        "value": {
                            # One host: the NM localizes straight from the local disk.
                            "resource": f"file://{command_file}",
                            "type": "FILE",
                            "visibility": "APPLICATION",
                            "size": stat.st_size,
                            "timestamp": int(stat.st_mtime * 1000),
                        },
                    }
                ]
            },
            "environment": {
                "entry": [
                    {
                        "key": "CLASSPATH",
                        "value": "<CPS>".join(["{{CLASSPATH}}", "./*", *cluster.apps_classpath]),
                    }
                ]
            },
            "commands": {"command": am_command},
        },
        "resource": {"memory": 384, "vCores": 1},
        "max-app-attempts": 1,
    }
    if node_label is not None:
        # The queue's default-node-label-expression does not reach apps submitted over REST:
        # the RM receives an explicit "" (default partition) unless the label is named here.
        body["app-node-label-expression"] = node_label
    resp = http.post(f"{rm}/ws/v1/cluster/apps", json=body, timeout=10)
    assert resp.status_code == 202, resp.text
    return app_id


def wait_end(cluster: DevCluster, app_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        app = cluster.http.get(f"{cluster.rm_url}/ws/v1/cluster/apps/{app_id}", timeout=10).json()
        app = app["app"]
        if app["state"] in TERMINAL:
            return app
        assert time.monotonic() < deadline, f"{app_id} still {app['state']} after {timeout}s"
        time.sleep(0.2)


def container_dirs(cluster: DevCluster, app_id: str) -> dict[str, str]:
    """container id -> NM ("nm1"/"nm2") whose log dir holds it (kept by debug-delay-sec)."""
    found = {}
    for nm in ("nm1", "nm2"):
        app_dir = cluster.layout.nm_log_dir(nm) / app_id
        if app_dir.is_dir():
            found.update({c.name: nm for c in app_dir.iterdir()})
    return found


def container_output(cluster: DevCluster, app_id: str, container: str, name: str) -> str:
    nm = container_dirs(cluster, app_id)[container]
    return (cluster.layout.nm_log_dir(nm) / app_id / container / name).read_text()
