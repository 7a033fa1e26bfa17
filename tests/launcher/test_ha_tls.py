"""The notebook side on HA and TLS clusters: HADOOP_CONF_DIR read as Hadoop reads it (an HA
pair of ResourceManagers, a nameservice of NameNodes, HTTPS_ONLY policies, ViewFS), the active
master found at each call and a failover survived, TLS verified against a CA bundle.

Unit tests: the masters are small HTTP(S) servers on 127.0.0.1 that answer as a standby or an
active Hadoop master does (a standby RM's 307, a standby NameNode's StandbyException)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme

from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.hadoopconf import Address, HadoopConf, hdfs_token_service
from tony_jupyter.core.spec import JobSpec
from tony_jupyter.core.tokens import HDFS_KIND, RM_KIND, WEBHDFS_KIND, Token
from tony_jupyter.launcher.yarn import rm as rm_mod
from tony_jupyter.launcher.yarn.rm import RMClient
from tony_jupyter.launcher.yarn.secure import Cluster, job_tokens
from tony_jupyter.launcher.yarn.staging import Staging

# --- configuration ---------------------------------------------------------------------------


def _site(path: Path, props: dict[str, str]) -> None:
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()
    )
    path.write_text(f"<configuration>{body}</configuration>")


@pytest.fixture
def conf_dir(tmp_path, monkeypatch):
    for name in ("TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_CONF_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")

    def write(core=None, hdfs=None, yarn=None) -> Path:
        _site(tmp_path / "core-site.xml", core or {})
        _site(tmp_path / "hdfs-site.xml", hdfs or {})
        _site(tmp_path / "yarn-site.xml", yarn or {})
        return tmp_path

    return write


HA_HDFS = {
    "dfs.nameservices": "nameservice1",
    "dfs.ha.namenodes.nameservice1": "nn1,nn2",
    "dfs.namenode.rpc-address.nameservice1.nn1": "master1.example:8020",
    "dfs.namenode.rpc-address.nameservice1.nn2": "master2.example:8020",
}
HA_YARN = {
    "yarn.resourcemanager.ha.enabled": "true",
    "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
    "yarn.resourcemanager.hostname.rm1": "master1.example",
    "yarn.resourcemanager.hostname.rm2": "master2.example",
}


def test_an_ha_cluster_is_read_as_hadoop_reads_it(conf_dir):
    d = conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, HA_HDFS, HA_YARN)
    conf = HadoopConf.load(d)
    # RPC addresses only: each NameNode's host with the default web port
    assert conf.webhdfs.urls == ("http://master1.example:9870", "http://master2.example:9870")
    assert conf.rm.urls == ("http://master1.example:8088", "http://master2.example:8088")
    assert "dfs.ha.namenodes.nameservice1" in conf.webhdfs.source
    assert "rm-ids" in conf.rm.source
    assert conf.default_fs == "hdfs://nameservice1"


def test_explicit_web_addresses_and_https_only_policies(conf_dir):
    hdfs = {
        **HA_HDFS,
        "dfs.http.policy": "HTTPS_ONLY",
        "dfs.namenode.https-address.nameservice1.nn1": "nn-a.example:50470",
    }
    yarn = {
        **HA_YARN,
        "yarn.http.policy": "HTTPS_ONLY",
        "yarn.resourcemanager.webapp.https.address.rm2": "rm-b.example:8443",
    }
    conf = HadoopConf.load(conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, hdfs, yarn))
    assert conf.webhdfs.urls == ("https://nn-a.example:50470", "https://master2.example:9871")
    assert conf.rm.urls == ("https://master1.example:8090", "https://rm-b.example:8443")


def test_a_single_https_only_master_uses_its_https_address(conf_dir):
    conf = HadoopConf.load(
        conf_dir(
            {"fs.defaultFS": "hdfs://nn.example:8020"},
            {"dfs.http.policy": "HTTPS_ONLY"},
            {"yarn.http.policy": "HTTPS_ONLY", "yarn.resourcemanager.hostname": "rm.example"},
        )
    )
    assert conf.webhdfs.urls == ("https://nn.example:9871",)
    assert conf.rm.urls == ("https://rm.example:8090",)


def test_the_rm_token_service_names_every_rm_of_the_pair(conf_dir):
    yarn = {
        **HA_YARN,
        "yarn.resourcemanager.address.rm1": "127.0.0.1:8032",
        "yarn.resourcemanager.address.rm2": "127.0.0.2:8032",
    }
    conf = HadoopConf.load(conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, HA_HDFS, yarn))
    assert conf.rm_token_service == "127.0.0.1:8032,127.0.0.2:8032"


FAILOVER = {
    "dfs.client.failover.proxy.provider.nameservice1": (
        "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
    )
}


@pytest.mark.parametrize(
    "default_fs, hdfs, service",
    [
        ("hdfs://nameservice1", {**HA_HDFS, **FAILOVER}, "ha-hdfs:nameservice1"),
        ("hdfs://nameservice1/", {**HA_HDFS, **FAILOVER}, "ha-hdfs:nameservice1"),
        # no client failover configured: Hadoop's client would not take it as logical either
        ("hdfs://nameservice1", HA_HDFS, ""),
        (
            "hdfs://nameservice1",
            {
                **HA_HDFS,
                "dfs.client.failover.proxy.provider.nameservice1": (
                    "org.apache.hadoop.hdfs.server.namenode.ha.IPFailoverProxyProvider"
                ),
            },
            "",
        ),
        ("hdfs://nn.example:8020", {**HA_HDFS, **FAILOVER}, ""),
        ("file:///", {**HA_HDFS, **FAILOVER}, ""),
    ],
)
def test_the_hdfs_token_service_is_the_nameservice_as_hadoops_client_names_it(
    conf_dir, default_fs, hdfs, service
):
    """DFSClient (HAUtilClient.buildTokenServiceForLogicalUri) names a logical nameservice's
    token ha-hdfs:<ns>; one NameNode's keeps its address (left as WebHDFS gives it)."""
    assert hdfs_token_service(hdfs, default_fs) == service
    conf = HadoopConf.load(conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, hdfs, HA_YARN))
    assert conf.hdfs_token_service == hdfs_token_service(hdfs, "hdfs://nameservice1")


@pytest.mark.parametrize(
    "hdfs, yarn, words",
    [
        (
            HA_HDFS,
            {**HA_YARN, "yarn.resourcemanager.ha.rm-ids": "rm1,rm3"},
            ["'rm3'", "hostname.rm3"],
        ),
        (
            {**HA_HDFS, "dfs.ha.namenodes.nameservice1": "nn1,nn9"},
            HA_YARN,
            ["'nn9'", "dfs.namenode.http-address.nameservice1.nn9"],
        ),
        ({"dfs.nameservices": "nameservice1"}, HA_YARN, ["dfs.ha.namenodes.nameservice1"]),
    ],
)
def test_a_master_id_without_an_address_is_named(conf_dir, hdfs, yarn, words):
    d = conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, hdfs, yarn)
    with pytest.raises(BackendError) as e:
        HadoopConf.load(d)
    for w in words:
        assert w in str(e.value)


def test_viewfs_stages_on_the_filesystem_that_mounts_the_users_home(conf_dir):
    core = {
        "fs.defaultFS": "viewfs://cluster1",
        "fs.viewfs.mounttable.cluster1.link./data": "hdfs://other/data",
        "fs.viewfs.mounttable.cluster1.link./user": "hdfs://nameservice1/user",
    }
    conf = HadoopConf.load(conf_dir(core, HA_HDFS, HA_YARN))
    assert conf.default_fs == "hdfs://nameservice1"
    assert conf.webhdfs.urls == ("http://master1.example:9870", "http://master2.example:9870")


@pytest.mark.parametrize(
    "links, words",
    [
        (
            {"fs.viewfs.mounttable.cluster1.link./data": "hdfs://x/data"},
            ["mounts nothing at /user/alice", "link./user"],
        ),
        ({"fs.viewfs.mounttable.cluster1.link./user": "hdfs://x/home"}, ["another path", "/user"]),
        ({"fs.viewfs.mounttable.cluster1.link./user": "s3a://bucket/user"}, ["HDFS only"]),
    ],
)
def test_a_viewfs_home_without_a_usable_mount_is_a_clear_error(conf_dir, links, words):
    d = conf_dir({"fs.defaultFS": "viewfs://cluster1", **links}, HA_HDFS, HA_YARN)
    with pytest.raises(BackendError) as e:
        HadoopConf.load(d)
    for w in words:
        assert w in str(e.value)


# --- masters that answer as standby or active ----------------------------------------------


NN_TOKEN = Token(b"identifier", b"password", WEBHDFS_KIND, "127.0.0.1:8020")


class Master:
    """An RM or NameNode stand-in; ``role`` is 'active', 'standby' or 'down' (closed port)."""

    def __init__(self, kind: str, tls: trustme.LeafCert | None = None):
        self.kind, self.role, self.hits = kind, "active", 0
        master = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self):
                master.hits += 1
                if master.kind == "rm":
                    status, body = master.rm_answer()
                else:
                    status, body = master.nn_answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                if status == 307:
                    self.send_header("Location", "http://elsewhere.invalid:8088/")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.configure_cert(ctx)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def rm_answer(self):
        if self.role == "standby":
            return 307, {"message": "This is standby RM. The redirect url is: elsewhere"}
        return 200, {"apps": {"app": [{"id": "application_1_0001", "state": "RUNNING"}]}}

    def nn_answer(self, path: str):
        if path.startswith("/jmx"):
            return 200, {"beans": [{"State": self.role}]}
        if self.role == "active" and "op=GETDELEGATIONTOKEN" in path:
            # as a NameNode's WebHDFS labels it: its own kind, its own RPC address
            return 200, {"Token": {"urlString": NN_TOKEN.encode()}}
        if self.role == "standby" and "delegation=" in path:
            # asked with a delegation token, which a standby's WebHDFS cannot check
            return 403, {
                "RemoteException": {
                    "exception": "SecurityException",
                    "javaClassName": "java.lang.SecurityException",
                    "message": "Failed to obtain user group information: org.apache.hadoop."
                    "security.token.SecretManager$InvalidToken: StandbyException",
                }
            }
        if self.role == "standby":
            return 403, {
                "RemoteException": {
                    "exception": "StandbyException",
                    "javaClassName": "org.apache.hadoop.ipc.StandbyException",
                    "message": "Operation category READ is not supported in state standby",
                }
            }
        return 200, {"boolean": True}

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def masters() -> Iterator[list[Master]]:
    made: list[Master] = []
    yield made
    for m in made:
        m.stop()


def _closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def test_the_rm_client_finds_the_active_rm_and_follows_a_failover(masters, monkeypatch):
    monkeypatch.setattr(rm_mod, "FAILOVER_WAIT_S", 3.0)
    a, b = Master("rm"), Master("rm")
    masters += [a, b]
    a.role = "standby"
    rm = RMClient(Address(f"{a.url};{b.url}", "test"), "alice")
    assert [x["id"] for x in rm.apps()] == ["application_1_0001"]
    assert rm.active == 1
    # failover: b goes standby, a becomes active; the next call goes on through a
    a.role, b.role = "active", "standby"
    before = a.hits
    assert rm.apps()
    assert rm.active == 0 and a.hits > before


def test_a_down_rm_is_skipped(masters):
    b = Master("rm")
    masters.append(b)
    rm = RMClient(Address(f"{_closed_port()};{b.url}", "test"), "alice")
    assert rm.apps()
    assert rm.active == 1


def test_no_active_rm_is_a_bounded_error_naming_every_address(masters, monkeypatch):
    monkeypatch.setattr(rm_mod, "FAILOVER_WAIT_S", 1.0)
    a, b = Master("rm"), Master("rm")
    masters += [a, b]
    a.role = b.role = "standby"
    rm = RMClient(Address(f"{a.url};{b.url}", "yarn.resourcemanager.ha.rm-ids"), "alice")
    t0 = time.monotonic()
    with pytest.raises(BackendError) as e:
        rm.apps()
    assert time.monotonic() - t0 < 5
    msg = str(e.value)
    assert "cannot reach an active YARN ResourceManager" in msg
    assert f"{a.url}: standby" in msg and f"{b.url}: standby" in msg
    assert "rm-ids" in msg


def test_staging_goes_through_the_active_namenode(masters, monkeypatch):
    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    a.role = "standby"
    staging = Staging(Address(f"{a.url};{b.url}", "test"), "alice", "hdfs://nameservice1")
    staging.check()  # MKDIRS: refused by the standby, done by the active
    assert a.hits >= 1 and b.hits >= 1


class _RM:
    """An RM REST client stand-in: the delegation token job_tokens asks it for."""

    def delegation_token(self, renewer: str) -> dict:
        return {"token": Token(b"rm-id", b"rm-pw", RM_KIND, "").encode()}

    def renew_token(self, token: str) -> float:
        raise AssertionError("not renewed here")


def test_an_ha_clusters_hdfs_token_is_the_nameservices_from_the_active_namenode(masters, conf_dir):
    """The token the notebook gets over WebHDFS from whichever NameNode is active goes into
    the job's credentials as Hadoop's client names it: ha-hdfs:<ns>, under that alias, so the
    RM renews it through the nameservice and the containers use it with either NameNode."""
    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    a.role = "standby"
    conf = HadoopConf.load(
        conf_dir({"fs.defaultFS": "hdfs://nameservice1"}, {**HA_HDFS, **FAILOVER}, HA_YARN)
    )
    staging = Staging(Address(f"{a.url};{b.url}", "test"), "alice", conf.default_fs)
    got = job_tokens(Cluster(conf, _RM(), staging), JobSpec("t", ()))  # type: ignore[arg-type]
    hdfs = Token.decode(got.tokens["ha-hdfs:nameservice1"])
    assert (hdfs.kind, hdfs.service) == (HDFS_KIND, "ha-hdfs:nameservice1")
    # what the NameNode checks is its own, untouched
    assert (hdfs.identifier, hdfs.password) == (NN_TOKEN.identifier, NN_TOKEN.password)
    assert "127.0.0.1:8020" not in got.tokens
    # one NameNode, no nameservice: the token keeps the NameNode's address
    plain = Staging(Address(b.url, "test"), "alice", "hdfs://nn.example:8020")
    assert Token.decode(plain.delegation_token("rm")).service == "127.0.0.1:8020"


def test_both_namenodes_standby_is_named(masters):
    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    a.role = b.role = "standby"
    staging = Staging(Address(f"{a.url};{b.url}", "dfs.ha.namenodes.ns1"), "alice", "")
    with pytest.raises(BackendError) as e:
        staging.check()
    msg = str(e.value)
    assert "no active NameNode" in msg and a.url in msg and b.url in msg


def test_a_tasks_dataset_reads_from_the_active_namenode(masters):
    from tony_jupyter.data.sources import _by_state

    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    a.role = "standby"
    assert _by_state(f"{a.url};{b.url}") == [b.url, a.url]
    a.role, b.role = "active", "standby"
    assert _by_state(f"{a.url};{b.url}") == [a.url, b.url]
    assert _by_state(a.url) == [a.url]


def test_a_dataset_filesystem_follows_a_namenode_failover(masters, monkeypatch):
    """tony_jupyter.data's filesystem, kept across calls (a session's cell keeps it for the
    next ones), goes on through the other NameNode once the one it used is standby, then down;
    with neither active, a bounded error naming both."""
    pytest.importorskip("fsspec")
    from tony_jupyter.data import sources, webhdfs

    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    b.role = "standby"
    monkeypatch.setenv("TONY_WEBHDFS_URL", f"{a.url};{b.url}")
    monkeypatch.setattr(webhdfs, "FAILOVER_WAIT_S", 1.0)
    fs = sources._webhdfs("hdfs://nameservice1/data")
    fs.mkdir("/data/1")
    assert fs.url.startswith(a.url) and b.hits == 0
    a.role, b.role = "standby", "active"
    fs.mkdir("/data/2")
    assert fs.url.startswith(b.url) and b.hits == 1
    b.stop()  # the new active one killed, the other made active
    a.role = "active"
    fs.mkdir("/data/3")
    assert fs.url.startswith(a.url)
    a.role = "standby"
    t0 = time.monotonic()
    with pytest.raises(webhdfs.NoActiveNameNode) as e:
        fs.mkdir("/data/4")
    assert time.monotonic() - t0 < 5
    assert f"{a.url}/webhdfs/v1: standby" in str(e.value)
    assert f"{b.url}/webhdfs/v1: ConnectionError" in str(e.value)


def test_a_tasks_clients_with_a_delegation_token_move_past_a_standby_namenode(masters, monkeypatch):
    """On a Kerberized HA cluster a task asks WebHDFS with its delegation token; a standby
    NameNode then answers with a SecurityException (it cannot check the token), not a
    StandbyException: the task's HdfsCLI client (checkpoint mirror) and tony_jupyter.data's
    filesystem go on to the active one all the same."""
    pytest.importorskip("fsspec")
    from tony_jupyter.core import tokens
    from tony_jupyter.data import sources, webhdfs

    a, b = Master("nn"), Master("nn")
    masters += [a, b]
    a.role = "standby"
    monkeypatch.setenv(tokens.ENV_TOKEN, NN_TOKEN.encode())
    monkeypatch.delenv(tokens.ENV_FILE, raising=False)
    monkeypatch.setenv("TONY_WEBHDFS_URL", f"{a.url};{b.url}")
    monkeypatch.setattr(webhdfs, "FAILOVER_WAIT_S", 1.0)
    client = tokens.webhdfs_client(f"{a.url};{b.url}", None)
    assert client.makedirs("/ckpt") is None
    assert (a.hits, b.hits) == (1, 1)
    a.role, b.role = "active", "standby"  # a filesystem kept across a failover
    fs = sources._webhdfs("hdfs://nameservice1/data")
    fs.mkdir("/data/1")
    assert fs.url.startswith(a.url)
    a.role, b.role = "standby", "active"
    fs.mkdir("/data/2")
    assert fs.url.startswith(b.url)
    # Another refusal of the token (not a standby's) is not mistaken for one.
    assert not tokens.standby_with_token(_answer(403, "InvalidToken: token expired"))
    assert tokens.standby_with_token(_answer(403, f"... {tokens.TOKEN_AT_STANDBY}"))


def _answer(status: int, message: str):
    import requests

    r = requests.Response()
    r.status_code = status
    r._content = json.dumps({"RemoteException": {"message": message}}).encode()
    return r


@pytest.mark.parametrize(
    "report, expected",
    [
        ({"state": "RUNNING", "amRPCAddress": "node2:4242"}, "http://node2:4242"),
        # The new active RM has recovered the application, its AM not yet re-registered.
        ({"state": "ACCEPTED", "amRPCAddress": "N/A"}, "http://node1:4141"),
        (None, "http://node1:4141"),  # no RM answers: a failover under way
        ({"state": "FINISHED", "finalStatus": "SUCCEEDED"}, None),
        ({"state": "KILLED"}, None),
    ],
)
def test_a_jobs_client_keeps_to_its_am_while_the_rms_fail_over(
    tmp_path, monkeypatch, report, expected
):
    """A fresh client of a running job (each of the panel's requests makes one) finds its AM at
    the address the job's start found while the RM gives none: the job is not shown STARTING,
    nor its AM unreachable, for the moments of an RM failover."""
    from tony_jupyter.core import jobdir
    from tony_jupyter.launcher.client import JobRecord
    from tony_jupyter.launcher.yarn import jobclient as yarn_client

    d = tmp_path / "application_1_0001"
    d.mkdir()
    (d / jobdir.TOKEN).write_text("t" * 32)
    info = {"app_id": d.name, "rm_url": "http://rm1:8088;http://rm2:8088"}
    (d / jobdir.YARN_INFO).write_text(json.dumps({**info, "am_url": "http://node1:4141"}))
    monkeypatch.setattr(yarn_client, "app_report", lambda info: report)
    assert yarn_client.YarnJobClient(JobRecord(d.name, d)).am_url() == expected
    # A record of a job whose AM was never seen up (adopted from elsewhere): the RM's word.
    (d / jobdir.YARN_INFO).write_text(json.dumps(info))
    running = expected if report and report["state"] == "RUNNING" else None
    assert yarn_client.YarnJobClient(JobRecord(d.name, d)).am_url() == running
    if running or not expected:
        return
    # The AM at the known address is gone (a new attempt's AM starting elsewhere): asked once,
    # then the client keeps to the RM's word.
    gone = _closed_port()
    (d / jobdir.YARN_INFO).write_text(json.dumps({**info, "am_url": gone}))
    c = yarn_client.YarnJobClient(JobRecord(d.name, d))
    assert c.am_url() == gone
    assert c.call_am("GET", "job") is None
    assert c.am_url() is None


# --- TLS -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_https_is_verified_against_tony_ca_bundle(masters, ca, tmp_path, monkeypatch):
    m = Master("rm", tls=ca.issue_cert("127.0.0.1", "localhost"))
    masters.append(m)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("TONY_CA_BUNDLE", str(bundle))
    assert RMClient(Address(m.url, "test"), "alice").apps()


def test_a_certificate_that_does_not_verify_names_the_host_and_the_bundle(
    masters, ca, tmp_path, monkeypatch
):
    m = Master("rm", tls=ca.issue_cert("127.0.0.1", "localhost"))
    masters.append(m)
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    monkeypatch.setenv("TONY_CA_BUNDLE", str(other))
    with pytest.raises(BackendError) as e:
        RMClient(Address(m.url, "test"), "alice").apps()
    msg = str(e.value)
    assert "127.0.0.1" in msg and str(other) in msg and "TONY_CA_BUNDLE" in msg
    assert m.hits == 0  # nothing was sent over the unverified connection


def test_plain_http_against_an_https_only_master_says_so(masters, ca):
    m = Master("rm", tls=ca.issue_cert("127.0.0.1"))
    masters.append(m)
    plain = m.url.replace("https://", "http://")
    with pytest.raises(BackendError) as e:
        RMClient(Address(plain, "yarn.resourcemanager.webapp.address"), "alice").apps()
    assert "speaks HTTPS" in str(e.value) and "HTTPS_ONLY" in str(e.value)


def test_verification_is_on_by_default(monkeypatch):
    from tony_jupyter.launcher.yarn import transport

    for name in ("TONY_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    assert transport.session().verify not in (False, None, "")


def test_hdfs_with_no_datanode_room_is_named_with_the_fix():
    """HDFS's own words for a DataNode that excluded itself (its disk full) say nothing of the
    disk; the error adds it, and how to see each DataNode's room."""
    from hdfs.util import HdfsError

    words = (
        "File /user/u/.tony-jupyter/app_1/cell.py could only be written to 0 of the 1 "
        "minReplication nodes. There are 1 datanode(s) running and 1 node(s) are excluded in "
        "this operation."
    )

    def write():
        raise HdfsError(words, exception="RemoteException")

    staging = Staging.__new__(Staging)  # _call reads no state on this path
    with pytest.raises(BackendError) as err:
        staging._call("writing cell.py", write)
    assert "HDFS refused writing cell.py" in str(err.value) and words in str(err.value)
    assert "disks are full" in str(err.value) and "hdfs dfsadmin -report" in str(err.value)
