"""`devcluster up --ha` without starting a JVM: the configuration it writes is the HA form that
the notebook side resolves (no single master's address), and its refusals come before anything
is made or started. The cluster itself: tests/ha (marked ``ha``)."""

from __future__ import annotations

import getpass

import pytest

from tony_jupyter.core.hadoopconf import HadoopConf, read_site
from tony_jupyter_devcluster import DevCluster, DevClusterError, failover, kerberos, process
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.config import Layout, write_config
from tony_jupyter_devcluster.security import Security


@pytest.fixture
def ha_conf(tmp_path):
    layout = Layout(tmp_path, port_offset=30000, ha=True)
    write_config(layout, getpass.getuser(), "/usr/bin")
    return layout


def test_the_config_is_the_ha_form_and_the_notebook_side_resolves_both_masters(ha_conf):
    conf = HadoopConf.load(ha_conf.conf)
    assert conf.default_fs == "hdfs://devcluster"
    assert conf.rm.urls == ("http://127.0.0.1:38088", "http://127.0.0.1:38188")
    assert conf.webhdfs.urls == ("http://127.0.0.1:39870", "http://127.0.0.1:39860")
    assert "yarn.resourcemanager.ha.rm-ids" in conf.rm.source
    # Every client resolves the pair; no single master's address is left to mislead one.
    hdfs = read_site(ha_conf.conf / "hdfs-site.xml")
    yarn = read_site(ha_conf.conf / "yarn-site.xml")
    for single in ("dfs.namenode.rpc-address", "dfs.namenode.http-address"):
        assert single not in hdfs
    for single in ("hostname", "address", "webapp.address", "scheduler.address"):
        assert f"yarn.resourcemanager.{single}" not in yarn
    assert hdfs["dfs.client.failover.proxy.provider.devcluster"].endswith(
        "ConfiguredFailoverProxyProvider"
    )
    assert hdfs["dfs.namenode.shared.edits.dir"] == f"file://{ha_conf.data / 'nn-shared'}"
    assert yarn["yarn.resourcemanager.store.class"].endswith("recovery.ZKRMStateStore")
    assert yarn["yarn.resourcemanager.recovery.enabled"] == "true"
    assert yarn["yarn.resourcemanager.work-preserving-recovery.enabled"] == "true"
    assert yarn["yarn.resourcemanager.zk-address"] == "127.0.0.1:32181"
    # The NMs' own yarn-site carries the same pair (their conf dir comes first for them).
    nm1 = read_site(ha_conf.nm_conf("nm1") / "yarn-site.xml")
    assert nm1["yarn.resourcemanager.ha.rm-ids"] == "rm1,rm2"
    zoo = (ha_conf.conf / "zoo.cfg").read_text()
    assert "clientPort=32181" in zoo and "clientPortAddress=127.0.0.1" in zoo
    assert "admin.enableServer=false" in zoo


def test_an_ha_cluster_has_its_daemons_in_start_order_and_its_fs_is_the_nameservice(tmp_path):
    dc = DevCluster(tmp_path, port_offset=30000, ha=True)
    assert dc.layout.service_names == (
        "zookeeper",
        "namenode",
        "namenode2",
        "datanode",
        "resourcemanager",
        "resourcemanager2",
        "nm1",
        "nm2",
    )
    assert dc.fs_default_name == "hdfs://devcluster"
    assert dc.env()["TONY_DEVCLUSTER_FS"] == "hdfs://devcluster"
    assert 32181 in dc.layout.all_ports() and 39860 in dc.layout.all_ports()
    # Nothing answers: the first of each pair, whose errors then name it.
    assert dc.rm_url == "http://127.0.0.1:38088"


def test_ha_with_tls_gives_each_master_its_https_address_and_the_notebook_side_uses_them(
    tmp_path,
):
    layout = Layout(tmp_path, port_offset=30000, ha=True, tls=True)
    # The config names the keystores and carries their password; keytool's files: tls tests.
    layout.tls_files.dir.mkdir(parents=True)
    layout.tls_files.password_file.write_text("pw\n")
    write_config(layout, getpass.getuser(), "/usr/bin")
    conf = HadoopConf.load(layout.conf)
    assert conf.rm.urls == ("https://127.0.0.1:38090", "https://127.0.0.1:38190")
    assert conf.webhdfs.urls == ("https://127.0.0.1:39871", "https://127.0.0.1:39881")
    hdfs = read_site(layout.conf / "hdfs-site.xml")
    yarn = read_site(layout.conf / "yarn-site.xml")
    assert "dfs.namenode.https-address" not in hdfs
    assert "yarn.resourcemanager.webapp.https.address" not in yarn
    assert hdfs["dfs.http.policy"] == yarn["yarn.http.policy"] == "HTTPS_ONLY"
    assert {39881, 38190} <= set(layout.all_ports())
    # failover's probes and the cluster's own URLs speak HTTPS to each master of a pair.
    assert failover.web_url(layout, "namenode2") == "https://127.0.0.1:39881"
    assert failover.web_url(layout, "resourcemanager") == "https://127.0.0.1:38090"


def test_ha_with_kerberos_has_the_pair_at_localhost_and_the_kdc_at_the_offset(tmp_path):
    """`up --ha --secure`: the pairs' addresses name localhost (their principals' host), the
    notebook side's RM principal resolves to it, and the KDC's port follows the offset, as
    every other port does, so that two secure clusters run side by side."""
    dc = DevCluster(tmp_path, port_offset=30000, security=True, ha=True)
    assert dc.layout.service_names[:2] == ("kdc", "zookeeper")
    assert dc.layout.ports("kdc") == {"kdc": 39088}
    assert 39088 in dc.layout.all_ports() and 32181 in dc.layout.all_ports()
    layout = Layout(tmp_path / "other", port_offset=30000, secure=True, ha=True)
    write_config(layout, getpass.getuser(), "/usr/bin", Security())
    conf = HadoopConf.load(layout.conf)
    assert conf.secure and conf.default_fs == "hdfs://devcluster"
    assert conf.webhdfs.urls == ("http://localhost:39870", "http://localhost:39860")
    assert conf.rm.urls == ("http://localhost:38088", "http://localhost:38188")
    assert conf.rm_principal == "rm/localhost@DEVCLUSTER.TEST"
    hdfs = read_site(layout.conf / "hdfs-site.xml")
    assert hdfs["dfs.namenode.kerberos.principal"] == "nn/_HOST@DEVCLUSTER.TEST"
    assert hdfs["dfs.namenode.rpc-address.devcluster.nn2"] == "localhost:38120"


def test_probes_for_the_active_masters_before_the_kdc_runs_count_as_no_answer(tmp_path):
    """`up --ha --secure` asks which master is active (for the daemons' environment) before
    the KDC has started: no ticket can be had yet, which is no answer, not a crash."""
    try:
        kerberos.check_tools()
    except DevClusterError as err:
        pytest.skip(str(err))
    dc = DevCluster(tmp_path, port_offset=30000, security=True, ha=True)
    kerberos.prepare(dc.layout, list(dc.users))  # keytabs and krb5.conf; no KDC runs
    with pytest.raises(kerberos.NoCredentials, match="no ticket for"):
        dc.http.get("http://localhost:38088/ws/v1/cluster/info", timeout=2)
    assert failover.ha_state(dc.layout, dc.http, "resourcemanager") is None
    # Neither answers: the first of each pair, whose errors then name it.
    assert dc.env()["TONY_DEVCLUSTER_RM_URL"] == "http://localhost:38088"


def test_ha_with_hosts_and_kerberos_is_refused_before_anything(tmp_path, capsys):
    """`up --hosts --ha` works (tests/hosts/test_hosts_ha.py); with --secure it is refused
    before anything is made (root or not: check_shape comes first), so not a file."""
    assert main(["up", "--dir", str(tmp_path), "--ha", "--hosts", "--secure"]) == 1
    err = capsys.readouterr().err
    assert "--secure together with --hosts --ha is not supported yet" in err
    assert "nn/master2" in err and "without --secure" in err
    assert not any(tmp_path.iterdir())


def test_failover_needs_an_ha_cluster(tmp_path, capsys):
    assert main(["failover", "nn", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "needs an HA cluster" in err and "up --ha" in err


def test_failover_with_no_active_master_kills_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "live_process", lambda pid_file: pytest.fail("looked for a pid"))
    dc = DevCluster(tmp_path, port_offset=30000, ha=True)
    with pytest.raises(DevClusterError, match="No ResourceManager .* is active: nothing to fail"):
        failover.failover(dc, "rm")


def test_up_ha_on_hdfs_formatted_without_ha_is_refused(tmp_path, monkeypatch):
    from tony_jupyter_devcluster import daemons

    (tmp_path / "data" / "nn" / "current").mkdir(parents=True)
    dc = DevCluster(tmp_path, port_offset=30000, ha=True)
    with pytest.raises(DevClusterError, match="formatted without --ha"):
        daemons.format_namenode(dc, dc.java_home)
    assert not (tmp_path / "data" / "nn2").exists()
