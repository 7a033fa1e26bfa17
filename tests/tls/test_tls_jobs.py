"""Jobs on an HTTPS-only devcluster (`devcluster up --tls`): the notebook side, the AM and the
executors all verify the cluster's own CA; a bundle that does not hold it, or plain HTTP, is
refused before anything is submitted."""

from __future__ import annotations

import json

import pytest
import requests
import trustme
from helpers.cells import MWMS
from helpers.jobs import wait_for
from sklearn.datasets import load_digits

from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter_devcluster import preflight

pytestmark = [pytest.mark.yarn, pytest.mark.tls, pytest.mark.slow]

# The executors' own WebHDFS client (checkpoints, history, TensorBoard logs use it) over HTTPS.
WEBHDFS_FROM_TASK = """
import os
from tony_jupyter.core import tokens
webhdfs = os.environ["TONY_WEBHDFS_URL"]
root_type = tokens.webhdfs_client(webhdfs, os.environ.get("HADOOP_USER_NAME")).status("/")["type"]
ca_used = tokens.ca_bundle()
"""


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    return shell


def test_the_cluster_serves_https_only_on_every_web_endpoint(tls_cluster):
    layout = tls_cluster.layout
    web = ("namenode", "datanode", "resourcemanager", "nm1", "nm2")
    for name in web:
        ports = layout.ports(name)
        assert preflight.port_in_use(ports["https"]), name
        assert not preflight.port_in_use(ports["http"]), f"{name} still serves plain HTTP"
    ca = str(tls_cluster.ca_bundle)
    for name in web:  # each presents a certificate of the cluster's CA, for 127.0.0.1
        url = f"https://127.0.0.1:{layout.ports(name)['https']}/jmx?qry=java.lang:type=Runtime"
        assert requests.get(url, verify=ca, timeout=10).ok, url
    with pytest.raises(requests.exceptions.SSLError):  # not by the system's bundle
        requests.get(f"{tls_cluster.rm_url}/ws/v1/cluster/info", verify=True, timeout=10)
    assert tls_cluster.env()["TONY_CA_BUNDLE"] == ca


def test_mwms_trains_over_https_and_list_logs_kill_work(digits, tony_home, cluster, capsys):
    job = digits.run_cell_magic(
        "tony",
        "--workers 2 --memory 1280m --conf tony.am.memory=768m --async "
        "--pull history,replicas,webhdfs,root_type,ca_used",
        WEBHDFS_FROM_TASK + MWMS,
    )
    tracking = wait_for(lambda: cluster.app(job.job_id).get("trackingUrl"), 120, "tracking URL")
    assert tracking.startswith("https://") and tracking.endswith(f"/proxy/{job.job_id}/")
    last = job.result(timeout=300)
    history = digits.user_ns["history"]
    assert digits.user_ns["replicas"] == 2
    assert last == history["loss"][-1] < history["loss"][0]
    assert digits.user_ns["webhdfs"].startswith("https://")
    assert digits.user_ns["root_type"] == "DIRECTORY"
    # The notebook's TONY_CA_BUNDLE went with the job: the task used its own localized copy.
    assert digits.user_ns["ca_used"].endswith("/ca-bundle.pem"), digits.user_ns["ca_used"]
    assert cluster.wait_app_end(job.job_id)["finalStatus"] == "SUCCEEDED"
    (rec,) = list_jobs()
    info = json.loads(rec.layout.yarn_info.read_text())
    assert info["rm_url"].startswith("https://") and info["webhdfs_url"].startswith("https://")
    capsys.readouterr()
    digits.run_line_magic("tony", "list")
    out = capsys.readouterr().out
    assert job.job_id in out and "SUCCEEDED" in out
    digits.run_line_magic("tony", f"logs {job.job_id} worker:1")
    assert "Epoch 3/3" in capsys.readouterr().out

    sleepy = digits.run_cell_magic(
        "tony", "--workers 1 --async --name sleepy", "import time\ntime.sleep(600)"
    )
    # YARN's web proxy, HTTPS only, leads to the running job's TensorBoard (the AM's tracking
    # URL), fetching it from the chief's container over plain HTTP inside the cluster.
    wait_for(lambda: "tensorboard" in sleepy.client.snapshot().endpoints, 120, "TensorBoard")
    page = wait_for(
        lambda: _tensorboard_page(cluster, cluster.app(sleepy.job_id)["trackingUrl"]),
        60,
        "TensorBoard through the RM's proxy",
    )
    assert 'name="tb-relative-root"' in page
    digits.run_line_magic("tony", f"kill {sleepy.job_id}")
    assert "KILLED" in capsys.readouterr().out
    assert cluster.wait_app_end(sleepy.job_id)["finalStatus"] == "KILLED"
    assert open_client(rec).logs("worker:0")[0]


def _tensorboard_page(cluster, tracking: str) -> str | None:
    assert tracking.startswith("https://"), tracking
    r = cluster.http.get(tracking, timeout=20)
    return r.text if r.ok and "TensorBoard" in r.text else None


def _refused(shell, cluster, *fragments: str) -> str:
    before, staged = {a["id"] for a in cluster.apps()}, set(cluster.staging())
    with pytest.raises(BackendError) as err:
        shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", "1 + 1\n")
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, message
    assert not list_jobs(), "a job record was left"
    assert {a["id"] for a in cluster.apps()} == before, "an application was created"
    assert set(cluster.staging()) == staged, "a staging directory was left"
    return message


def test_a_certificate_that_does_not_verify_names_the_host_and_the_bundle(
    shell, tony_home, cluster, tls_cluster, monkeypatch, tmp_path
):
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    monkeypatch.setenv("TONY_CA_BUNDLE", str(other))
    _refused(
        shell,
        cluster,
        "TLS certificate of 127.0.0.1",
        f"{tls_cluster.rm_url}",
        f"{other} (from TONY_CA_BUNDLE)",
        "Set TONY_CA_BUNDLE",
    )


def test_a_bundle_that_cannot_be_read_is_named(shell, tony_home, cluster, monkeypatch, tmp_path):
    monkeypatch.setenv("TONY_CA_BUNDLE", str(tmp_path / "missing.pem"))
    _refused(shell, cluster, f"cannot read TONY_CA_BUNDLE={tmp_path / 'missing.pem'}")


@pytest.mark.parametrize("master", ["resourcemanager", "namenode"])
def test_plain_http_against_the_https_only_cluster_says_so(
    shell, tony_home, cluster, tls_cluster, monkeypatch, master
):
    port = tls_cluster.layout.ports(master)["https"]
    var = "TONY_YARN_RM_URL" if master == "resourcemanager" else "TONY_WEBHDFS_URL"
    monkeypatch.setenv(var, f"http://127.0.0.1:{port}")
    _refused(shell, cluster, f"http://127.0.0.1:{port} speaks HTTPS, not HTTP", "HTTPS_ONLY")
