"""Hadoop's distributed-shell AM, submitted over the RM's REST API (no JVM on the client, as
for tony-jupyter): the stand-in for TonY's AM when TonY itself cannot be had (see README)."""

from __future__ import annotations

import getpass
import struct
import time
from pathlib import Path

import requests

DS_AM = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"
TERMINAL = ("FINISHED", "FAILED", "KILLED")
CONTAINER_MB = 1024  # what the tony-jupyter side asks per task (--memory 1g)


def submit(cluster, work_dir: Path, shell_command: str, containers: int) -> str:
    user = getpass.getuser()
    # The AM reads its command from the localized file "shellCommands", which DS's Java client
    # writes with DataOutputStream.writeUTF: a 2-byte big-endian length, then the bytes.
    command_file = work_dir / "shellCommands"
    data = shell_command.encode()
    command_file.write_bytes(struct.pack(">H", len(data)) + data)
    stat = command_file.stat()
    rm = cluster.rm_url
    resp = requests.post(
        f"{rm}/ws/v1/cluster/apps/new-application", params={"user.name": user}, timeout=10
    )
    resp.raise_for_status()
    app_id = resp.json()["application-id"]
    am_command = " ".join(
        [
            "{{JAVA_HOME}}/bin/java",
            *cluster.jvm_flags,
            "-Xmx256m",
            DS_AM,
            f"--container_memory {CONTAINER_MB} --container_vcores 1",
            f"--num_containers {containers}",
            "1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr",
        ]
    )
    resource = {
        "resource": f"file://{command_file}",  # one host: the NM localizes from local disk
        "type": "FILE",
        "visibility": "APPLICATION",
        "size": stat.st_size,
        "timestamp": int(stat.st_mtime * 1000),
    }
    classpath = "<CPS>".join(["{{CLASSPATH}}", "./*", *cluster.apps_classpath])
    body = {
        "application-id": app_id,
        "application-name": "tony-bench-distributed-shell",
        "application-type": "TONY-BENCH",
        "queue": "default",
        "am-container-spec": {
            "local-resources": {"entry": [{"key": "shellCommands", "value": resource}]},
            "environment": {"entry": [{"key": "CLASSPATH", "value": classpath}]},
            "commands": {"command": am_command},
        },
        "resource": {"memory": 384, "vCores": 1},
        "max-app-attempts": 1,
    }
    resp = requests.post(
        f"{rm}/ws/v1/cluster/apps", params={"user.name": user}, json=body, timeout=10
    )
    if resp.status_code != 202:
        raise RuntimeError(f"RM refused the distributed-shell app: {resp.text[:500]}")
    return app_id


def app(cluster, app_id: str) -> dict:
    return requests.get(f"{cluster.rm_url}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]


def check_alive(cluster, app_id: str) -> None:
    got = app(cluster, app_id)
    if got["state"] in TERMINAL:
        raise RuntimeError(
            f"distributed shell {app_id} ended early: {got['finalStatus']} "
            f"{got.get('diagnostics', '')[:500]}"
        )


def wait_end(cluster, app_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        got = app(cluster, app_id)
        if got["state"] in TERMINAL:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{app_id} still {got['state']} after {timeout} s")
        time.sleep(0.2)


def kill(cluster, app_id: str) -> None:
    try:
        requests.put(
            f"{cluster.rm_url}/ws/v1/cluster/apps/{app_id}/state",
            params={"user.name": getpass.getuser()},
            json={"state": "KILLED"},
            timeout=10,
        )
    except requests.RequestException:
        pass
