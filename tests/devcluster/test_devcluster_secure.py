"""`devcluster up --secure` against itself: a real MIT KDC, Hadoop's secure mode, SPNEGO from
curl and from Python, HDFS permissions and YARN ACLs between alice and bob, and a `down` that
leaves nothing behind. One cluster for the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest
from devcluster_ds import submit, wait_end

from tony_jupyter_devcluster import DevCluster
from tony_jupyter_devcluster.config import KDC, SERVICE_NAMES
from tony_jupyter_devcluster.security import REALM, Security
from tony_jupyter_devcluster.testing import start_devcluster

pytestmark = [pytest.mark.yarn, pytest.mark.secure]

# Not Hadoop's defaults, so that the test sees them reach the daemons.
SECURITY = Security(token_renew_interval_s=3600, token_max_lifetime_s=7200)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    started = time.monotonic()
    dc = start_devcluster(tmp_path_factory.mktemp("secure-devcluster"), SECURITY)
    print(f"up --secure took {time.monotonic() - started:.1f} s", file=sys.stderr)
    try:
        yield dc
    finally:
        dc.down()


def _cli(cluster: DevCluster, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "tony_jupyter_devcluster", *args, "--dir", str(cluster.dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


def _in_env_of(cluster: DevCluster, user: str, script: str) -> subprocess.CompletedProcess:
    """``script`` in bash after `eval "$(devcluster env --user USER)"`, as a user would."""
    env_cmd = f"{sys.executable} -m tony_jupyter_devcluster env --user {user} --dir {cluster.dir}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KRB5")}
    return subprocess.run(
        ["bash", "-c", f'set -e; eval "$({env_cmd})"; {script}'],
        capture_output=True,
        text=True,
        env=clean,
        timeout=60,
        check=False,
    )


def _curl(url: str, *flags: str, cluster: DevCluster | None = None, user: str = "") -> str:
    """The HTTP status of a GET; with ``user``, through SPNEGO with that user's ticket."""
    args = " ".join(flags)
    cmd = f"curl -s -o /dev/null -w '%{{http_code}}' {args} '{url}'"
    if not user:
        return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True).stdout
    assert cluster is not None
    proc = _in_env_of(cluster, user, cmd.replace("curl ", "curl --negotiate -u : ", 1))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_daemon_and_the_kdc_run(cluster: DevCluster) -> None:
    rows = {row["service"]: row for row in json.loads(_cli(cluster, "status", "--json"))}
    assert list(rows) == [KDC, *SERVICE_NAMES]
    assert all(row["alive"] for row in rows.values())
    # The KDC answers on loopback only.
    kdc = psutil.Process(rows[KDC]["pid"])
    listening = {(c.laddr.ip, c.laddr.port) for c in kdc.net_connections("inet")}
    assert listening == {("127.0.0.1", rows[KDC]["ports"]["kdc"])}
    assert cluster.rm_url.startswith("http://localhost:")


def test_env_user_gives_alice_a_ticket(cluster: DevCluster) -> None:
    proc = _in_env_of(cluster, "alice", 'klist; echo "KRB5_CONFIG=$KRB5_CONFIG"')
    assert proc.returncode == 0, proc.stderr
    assert f"Default principal: alice@{REALM}" in proc.stdout
    assert f"krbtgt/{REALM}@{REALM}" in proc.stdout
    assert f"KRB5_CONFIG={cluster.layout.krb5_conf}" in proc.stdout
    # Each user has a ccache of its own.
    assert str(cluster.layout.ccache("alice")) in proc.stdout


@pytest.mark.parametrize(
    "path",
    ["/ws/v1/cluster/info", "/cluster/apps", "/proxy/application_1_0001/"],
    ids=["rm-rest", "rm-ui", "rm-web-proxy"],
)
def test_rm_refuses_anonymous_and_takes_spnego(cluster: DevCluster, path: str) -> None:
    url = f"{cluster.rm_url}{path}"
    assert _curl(url) == "401"
    # A user name in the query is not authentication.
    assert _curl(f"{url}?user.name=alice") == "401"
    if path.startswith("/proxy"):
        # Authenticated, the proxy answers for an app that does not exist.
        assert _curl(url, cluster=cluster, user="alice") not in ("401", "403")
    else:
        assert _curl(url, cluster=cluster, user="alice") == "200"


def test_webhdfs_refuses_anonymous_and_takes_spnego(cluster: DevCluster) -> None:
    url = f"{cluster.webhdfs_url}/webhdfs/v1/user?op=LISTSTATUS"
    assert _curl(url) == "401"
    assert _curl(f"{url}&user.name=alice") == "401"
    assert _curl(url, cluster=cluster, user="alice") == "200"
    # The DataNode's own web UI too.
    dn = f"http://localhost:{cluster.layout.ports('datanode')['http']}/datanode.html"
    assert _curl(dn) == "401"


def test_alice_home_is_hers_and_bob_cannot_write_there(cluster: DevCluster) -> None:
    alice, bob = cluster.session("alice"), cluster.session("bob")
    webhdfs = f"{cluster.webhdfs_url}/webhdfs/v1"
    home = alice.get(f"{webhdfs}/", params={"op": "GETHOMEDIRECTORY"}, timeout=30)
    assert home.json() == {"Path": "/user/alice"}
    status = alice.get(f"{webhdfs}/user/alice", params={"op": "GETFILESTATUS"}, timeout=30)
    info = status.json()["FileStatus"]
    assert (info["type"], info["owner"], info["permission"]) == ("DIRECTORY", "alice", "755")

    # Through the DataNode: a write and a read over SASL-protected data transfer.
    payload = b"alice's data\n" * 1000
    created = alice.put(
        f"{webhdfs}/user/alice/data.txt",
        params={"op": "CREATE", "overwrite": "true"},
        data=payload,
        timeout=30,
    )
    assert created.status_code == 201, created.text
    read = alice.get(f"{webhdfs}/user/alice/data.txt", params={"op": "OPEN"}, timeout=30)
    assert read.content == payload
    owner = alice.get(f"{webhdfs}/user/alice/data.txt", params={"op": "GETFILESTATUS"}, timeout=30)
    assert owner.json()["FileStatus"]["owner"] == "alice"

    denied = bob.put(
        f"{webhdfs}/user/alice/from-bob.txt", params={"op": "CREATE"}, data=b"x", timeout=30
    )
    assert denied.status_code == 403
    assert "Permission denied: user=bob, access=WRITE" in denied.text
    gone = alice.get(f"{webhdfs}/user/alice/from-bob.txt", params={"op": "GETFILESTATUS"})
    assert gone.status_code == 404


def _conf(cluster: DevCluster, url: str, name: str) -> str:
    resp = cluster.http.get(f"{url}/conf", params={"name": name}, headers={"Accept": "json"})
    resp.raise_for_status()
    return resp.json()["property"]["value"]


def test_acls_and_token_lifetimes_reach_the_daemons(cluster: DevCluster) -> None:
    rm, nn = cluster.rm_url, cluster.webhdfs_url
    assert _conf(cluster, rm, "yarn.acl.enable") == "true"
    assert _conf(cluster, rm, "hadoop.security.authentication") == "kerberos"
    assert _conf(cluster, rm, "yarn.resourcemanager.delegation.token.renew-interval") == "3600000"
    assert _conf(cluster, rm, "yarn.resourcemanager.delegation.token.max-lifetime") == "7200000"
    assert _conf(cluster, nn, "dfs.namenode.delegation.token.renew-interval") == "3600000"
    assert _conf(cluster, nn, "dfs.namenode.delegation.token.max-lifetime") == "7200000"
    assert _conf(cluster, nn, "dfs.data.transfer.protection") == "integrity"


def test_yarn_app_of_alice_is_hers_to_kill(cluster: DevCluster, tmp_path) -> None:
    """A YARN application runs as alice under Kerberos; bob may not kill it, alice may."""
    alice, bob = cluster.session("alice"), cluster.session("bob")
    app_id = submit(cluster, tmp_path, "sleep 120", http=alice)
    state_url = f"{cluster.rm_url}/ws/v1/cluster/apps/{app_id}/state"
    deadline = time.monotonic() + 120
    while alice.get(state_url, timeout=10).json()["state"] != "RUNNING":
        assert time.monotonic() < deadline, "alice's app never ran"
        time.sleep(0.5)
    app = alice.get(f"{cluster.rm_url}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]
    assert (app["user"], app["queue"]) == ("alice", "root.default")

    refused = bob.put(state_url, json={"state": "KILLED"}, timeout=10)
    assert refused.status_code == 403, refused.text
    killed = alice.put(state_url, json={"state": "KILLED"}, timeout=10)
    assert killed.status_code in (200, 202), killed.text
    assert wait_end(cluster, app_id)["state"] == "KILLED"


def test_auth_to_local_maps_principals_to_short_names(cluster: DevCluster) -> None:
    """Hadoop's own reading of hadoop.security.auth_to_local; another realm maps to nothing."""
    names = {
        f"alice@{REALM}": "alice",
        f"bob@{REALM}": "bob",
        f"nn/localhost@{REALM}": "hdfs",
        f"dn/localhost@{REALM}": "hdfs",
        f"rm/localhost@{REALM}": "yarn",
        f"nm/localhost@{REALM}": "yarn",
        "alice@OTHER.REALM": None,  # last: HadoopKerberosName stops at the first failure
    }
    proc = subprocess.run(
        [
            str(cluster.java_home / "bin" / "java"),
            *cluster.jvm_flags,
            "-cp",
            ":".join(cluster.hadoop_classpath),
            "org.apache.hadoop.security.HadoopKerberosName",
            *names,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    for name, short in names.items():
        if short is not None:
            assert f"Name: {name} to {short}" in proc.stdout, proc.stdout + proc.stderr
    assert "No rules applied to alice@OTHER.REALM" in proc.stderr


def test_down_leaves_no_kdc_and_no_daemon(cluster: DevCluster) -> None:
    """Last in the module: the fixture's own `down` then finds nothing to do."""
    pids = [row["pid"] for row in cluster.status()]
    assert len(pids) == 1 + len(SERVICE_NAMES) and all(pids)
    family = []
    for pid in pids:
        proc = psutil.Process(pid)
        family += [proc, *proc.children(recursive=True)]
    kdc_port = cluster.layout.ports(KDC)["kdc"]

    _cli(cluster, "down")

    _, alive = psutil.wait_procs(family, timeout=10)
    assert not alive
    assert not any(psutil.pid_exists(pid) and not _zombie(pid) for pid in pids)
    assert not any(cluster.layout.run.glob("*.pid"))
    assert not cluster.is_running()
    assert all(not row["alive"] for row in cluster.status())
    listening = {c.laddr.port for c in psutil.net_connections("inet") if c.status == "LISTEN"}
    assert kdc_port not in listening
    assert not set(cluster.layout.all_ports()) & listening


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
