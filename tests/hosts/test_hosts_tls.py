"""HTTPS only on the several-host cluster (`devcluster up --hosts --tls`), from the edge host:
every daemon presents the cluster's certificate under its own host's name (master, worker1,
worker2 as subjectAltNames), which a client on the edge verifies against the CA bundle that
`devcluster env --host edge` names; WebHDFS's redirect to a DataNode on a worker host is HTTPS
too. Its own cluster for the module, and one small job from a kernel on the edge (what a job
does over HTTPS is the one-host TLS suite's; here, that every name a client meets on these hosts
verifies, the job's packed venv included, and its TensorBoard through the RM's HTTPS proxy)."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import on, on_edge  # tests/hosts/conftest.py

from tony_jupyter_devcluster import DevCluster

pytestmark = [pytest.mark.hosts, pytest.mark.tls]
HERE = Path(__file__).parent

# Run on the edge by the project's Python (the edge sees the machine's files): each endpoint
# over HTTPS, verified against TONY_CA_BUNDLE by host name; plain HTTP on the old port; a file
# written and read back through WebHDFS (the NameNode redirects to a DataNode's HTTPS port).
_PROBE = """
import json, os, sys, requests
ca = os.environ["TONY_CA_BUNDLE"]
urls = json.loads(sys.argv[1])
out = {"codes": {}, "plain_http": None}
for name, url in urls.items():
    out["codes"][name] = requests.get(url, params={"user.name": "root"}, verify=ca,
                                      timeout=30).status_code
try:
    requests.get(sys.argv[2], timeout=10)
    out["plain_http"] = "answered"
except requests.ConnectionError as e:
    out["plain_http"] = type(e).__name__
nn = os.environ["TONY_DEVCLUSTER_WEBHDFS_URL"] + "/webhdfs/v1/tmp/tls-probe"
q = {"user.name": "root"}
r = requests.put(nn, params={**q, "op": "CREATE", "overwrite": "true"}, verify=ca,
                 allow_redirects=False, timeout=30)
out["redirect"] = r.headers.get("Location", "").split("/webhdfs")[0]
requests.put(r.headers["Location"], data=b"over https", verify=ca, timeout=30).raise_for_status()
out["read_back"] = requests.get(nn, params={**q, "op": "OPEN"}, verify=ca, timeout=30).text
by_address = urls["resourcemanager"].replace("master", "198.18.0.11")  # an IP SAN too
out["by_address"] = requests.get(by_address, params=q, verify=ca, timeout=10).status_code
bare = requests.Session()
bare.trust_env = False  # no REQUESTS_CA_BUNDLE of the shell's
try:  # against the system's CAs instead of the cluster's: refused
    bare.get(urls["resourcemanager"], verify=True, timeout=10)
    out["system_cas"] = "verified"
except requests.exceptions.SSLError:
    out["system_cas"] = "SSLError"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tls_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    if os.geteuid() != 0:
        pytest.fail("tests marked hosts need root (network namespaces, a bridge, mounts)")
    cluster = DevCluster(tmp_path_factory.mktemp("hosts-tls"), hosts=True, tls_on=True)
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def test_every_daemon_serves_https_under_its_hosts_name(tls_hosts):
    layout = tls_hosts.layout
    urls = {
        name: f"https://{layout.host_of(name)}:{layout.ports(name)['https']}{path}"
        for name, path in (
            ("resourcemanager", "/ws/v1/cluster/info"),
            ("namenode", "/webhdfs/v1/?op=LISTSTATUS"),
            ("datanode", "/"),
            ("datanode2", "/"),
            ("nm1", "/ws/v1/node/info"),
            ("nm2", "/ws/v1/node/info"),
            ("datanode3", "/"),
            ("nm3", "/ws/v1/node/info"),
        )
    }
    plain = f"http://master:{layout.ports('resourcemanager')['http']}/"
    res = on(tls_hosts, "edge", sys.executable, "-c", _PROBE, json.dumps(urls), plain)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    out = json.loads(res.stdout.splitlines()[-1])
    assert set(urls) == {"resourcemanager", "namenode", "datanode", "datanode2", "datanode3"} | {
        "nm1",
        "nm2",
        "nm3",
    }
    # (A DataNode's web root redirects to its status page, on its own host: followed.)
    assert out["codes"] == dict.fromkeys(urls, 200), out
    assert out["plain_http"] == "ConnectionError", out
    port = layout.ports("datanode")["https"]
    # Any of the three workers' DataNodes (nm1-nm3 above): the NameNode picks one.
    workers = ("worker1", "worker2", "worker3")
    assert out["redirect"] in [f"https://{w}:{port}" for w in workers], out
    assert out["read_back"] == "over https", out
    assert out["by_address"] == 200 and out["system_cas"] == "SSLError", out
    san = Path(layout.tls_files.san_file).read_text()
    assert all(f"dns:{h}" in san for h in ("edge", "master", "worker1", "worker2")), san


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node venv without TensorFlow (nodeenv.BASE_ROOTS): what a one-worker job and its
    TensorBoard need, a quarter of the TensorFlow venv's size to ship and localize."""
    import nodeenv  # tests/hosts/nodeenv.py

    from tony_jupyter_devcluster.hosts import node_python

    python = node_python()
    if python is None:
        pytest.fail("the machine has no interpreter of the kernel's version for the nodes")
    return nodeenv.build(tmp_path_factory.mktemp("baseenv"), python, nodeenv.BASE_ROOTS)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_job_from_the_edge_over_https_and_its_tensorboard_through_the_rm_proxy(
    tls_hosts, base_venv, tmp_path
):
    name = f"hosts-tls-{uuid.uuid4().hex[:6]}"
    _, out = on_edge(tls_hosts, base_venv, tmp_path / "notebook", "edge_tls.py", name, result=name)
    assert "error" not in out, out["error"]
    assert out["kernel_host"] == "edge" and out["where"] == "worker1", out  # the default queue
    # The task verified WebHDFS against its own localized copy of the notebook's CA bundle.
    assert out["ca"].endswith("/ca-bundle.pem"), out
    port = tls_hosts.layout.ports("resourcemanager")["https"]
    assert out["tracking"] == f"https://master:{port}/proxy/{out['job_id']}/", out
    assert out["page_ok"] and isinstance(out["runs"], list), out
    assert out["final"] == ["FINISHED", "SUCCEEDED"], out
    print(json.dumps({"tls_job_seconds": out["seconds"]}))
