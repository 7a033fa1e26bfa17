"""`devcluster up --tls` without a cluster: the CA and keystores keytool makes (a real JDK), and
the HTTPS settings written for the daemons and the clients."""

from __future__ import annotations

import ipaddress
import shutil
from xml.etree import ElementTree

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12

from tony_jupyter_devcluster import DevCluster, preflight, tls
from tony_jupyter_devcluster.config import Layout, write_config
from tony_jupyter_devcluster.errors import DevClusterError


def _props(path) -> dict[str, str]:
    root = ElementTree.parse(path).getroot()
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    try:
        java_home = preflight.find_java_home()
    except DevClusterError as err:
        pytest.skip(str(err))
    if not (java_home / "bin" / "keytool").exists():
        pytest.skip(f"no keytool in {java_home}")
    files = tls.TlsFiles(tmp_path_factory.mktemp("tls"))
    tls.prepare(files, java_home)
    return files, java_home


def test_the_server_certificate_is_signed_by_the_ca_for_localhost_and_the_hosts(made):
    files, _ = made
    ca = x509.load_pem_x509_certificate(files.ca_pem.read_bytes())
    key, cert, chain = pkcs12.load_key_and_certificates(
        files.keystore.read_bytes(), files.password().encode()
    )
    assert key is not None and cert is not None
    cert.verify_directly_issued_by(ca)  # raises if the CA did not sign it
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    # localhost for the one-host cluster, and each host of `up --hosts` (with --ha, master2)
    # by name and address
    names = ["localhost", "edge", "master", "worker1", "worker2", "worker3", "master2"]
    assert san.get_values_for_type(x509.DNSName) == names
    addresses = ["127.0.0.1", "198.18.0.10", "198.18.0.11", "198.18.0.21", "198.18.0.22"]
    addresses += ["198.18.0.23", "198.18.0.12"]
    assert san.get_values_for_type(x509.IPAddress) == list(map(ipaddress.ip_address, addresses))
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.subject in [c.subject for c in chain]  # the chain it presents ends at the CA
    assert files.password_file.stat().st_mode & 0o077 == 0


def test_the_files_are_kept_across_ups(made):
    files, java_home = made
    pem, keystore = files.ca_pem.read_bytes(), files.keystore.read_bytes()
    tls.prepare(files, java_home)  # all there: untouched, so handed-out bundles stay valid
    assert files.ca_pem.read_bytes() == pem and files.keystore.read_bytes() == keystore


def test_a_certificate_made_for_other_names_is_made_again(tmp_path, made):
    _, java_home = made
    files = tls.TlsFiles(tmp_path)
    tls.prepare(files, java_home)
    pem = files.ca_pem.read_bytes()
    files.san_file.write_text("dns:localhost,ip:127.0.0.1\n")  # as an older `up --tls` left it
    tls.prepare(files, java_home)
    assert files.ca_pem.read_bytes() != pem
    assert files.san_file.read_text().strip() == tls.SAN


def test_the_config_says_https_only_on_https_ports(tmp_path, made):
    files, _ = made
    layout = Layout(tmp_path, port_offset=20000, tls=True)
    shutil.copytree(files.dir, layout.tls_files.dir)
    write_config(layout, "someone", "/usr/bin")
    hdfs, yarn = _props(layout.conf / "hdfs-site.xml"), _props(layout.conf / "yarn-site.xml")
    assert hdfs["dfs.http.policy"] == yarn["yarn.http.policy"] == "HTTPS_ONLY"
    assert hdfs["dfs.namenode.https-address"] == "127.0.0.1:29871"
    assert hdfs["dfs.datanode.https.address"] == "127.0.0.1:29865"
    assert yarn["yarn.resourcemanager.webapp.https.address"] == "127.0.0.1:28090"
    assert "TONY_CA_BUNDLE" in yarn["yarn.nodemanager.env-whitelist"].split(",")
    nm2 = _props(layout.nm_conf("nm2") / "yarn-site.xml")
    assert nm2["yarn.nodemanager.webapp.https.address"] == "127.0.0.1:28144"
    server = _props(layout.conf / "ssl-server.xml")
    assert server["ssl.server.keystore.location"] == str(layout.tls_files.keystore)
    client = _props(layout.conf / "ssl-client.xml")
    assert client["ssl.client.truststore.location"] == str(layout.tls_files.truststore)
    assert {"namenode https", "resourcemanager https", "nm1 https"} <= set(
        layout.all_ports().values()
    )
    plain = Layout(tmp_path / "plain")
    assert "https" not in plain.ports("resourcemanager")


def test_a_tls_cluster_says_https_and_exports_its_bundle(tmp_path, capsys):
    dc = DevCluster(tmp_path, port_offset=20000, tls_on=True)
    assert dc.rm_url == "https://127.0.0.1:28090"
    assert dc.webhdfs_url == "https://127.0.0.1:29871"
    assert dc.env()["TONY_CA_BUNDLE"] == str(tmp_path / "tls" / "ca.pem")
    assert dc.session().verify == str(dc.ca_bundle)
    plain = DevCluster(tmp_path / "plain", port_offset=20000)
    assert plain.rm_url.startswith("http://") and "TONY_CA_BUNDLE" not in plain.env()
