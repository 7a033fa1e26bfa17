"""Error paths of `devcluster up`, each without starting a JVM: stub binaries and monkeypatches.

Every test checks the message (problem and fix) and that nothing was left running or behind.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import psutil
import pytest
from helpers.leftovers import processes_under, wait_nothing_left

from tony_jupyter_devcluster import (
    DevCluster,
    DevClusterError,
    kerberos,
    maven,
    preflight,
    process,
)
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.config import SERVICE_NAMES, Layout, write_config
from tony_jupyter_devcluster.security import Security


def _stub(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_java(tmp_path, monkeypatch):
    """JAVA_HOME pointing at a stub `java` that reports the version it is given."""

    def make(version: str) -> Path:
        home = tmp_path / f"jdk-{version}"
        _stub(home / "bin" / "java", f"""echo 'openjdk version "{version}" 2024-01-16' >&2\n""")
        monkeypatch.setenv("JAVA_HOME", str(home))
        return home

    return make


@pytest.fixture
def no_daemons(monkeypatch):
    """Fail the test if anything tries to start a daemon."""

    def refuse(*args, **kwargs):
        raise AssertionError("a daemon was started")

    monkeypatch.setattr(process, "start", refuse)


def _assert_nothing_left(root: Path) -> None:
    run = root / "run"
    wait_nothing_left(
        0,  # at once: a refused `up` started nothing
        pid_files=lambda: sorted(run.glob("*.pid")) if run.exists() else [],
        processes=lambda: processes_under(root),
    )


def test_wrong_java_version(tmp_path, fake_java, no_daemons) -> None:
    home = fake_java("11.0.22")
    with pytest.raises(DevClusterError) as err:
        DevCluster(tmp_path / "dc").up()
    message = str(err.value)
    assert f"Java 11 at {home}" in message
    assert "Hadoop 3.5 needs Java 17 or newer" in message
    assert "export JAVA_HOME=" in message
    _assert_nothing_left(tmp_path / "dc")


def test_java_too_new(tmp_path, fake_java) -> None:
    fake_java("26")
    with pytest.raises(DevClusterError, match="tried on Java 17 to 25 only"):
        preflight.check_java(preflight.find_java_home())


def test_java_8_version_string(fake_java) -> None:
    assert preflight.java_major_version(fake_java("1.8.0_402")) == 8


def test_no_java(tmp_path, monkeypatch, no_daemons) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(DevClusterError, match="No Java found.*apt-get install openjdk-17"):
        DevCluster(tmp_path / "dc").up()


def test_java_home_without_java(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(DevClusterError, match="does not point at a JDK"):
        preflight.check_java(preflight.find_java_home())


@pytest.fixture
def java_ok(fake_java):
    fake_java("17.0.15")


def test_port_in_use(tmp_path, java_ok, no_daemons) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # The offset that puts the RM's web port exactly on the busy one.
        with pytest.raises(DevClusterError) as err:
            DevCluster(tmp_path / "dc", port_offset=port - 8088).up()
    message = str(err.value)
    # Other ports in the shifted range may happen to be busy too; each is listed.
    assert message.startswith("Port already in use on 127.0.0.1: ")
    assert f"{port} (resourcemanager http)" in message
    assert "ss -ltnp 'sport = :" in message
    _assert_nothing_left(tmp_path / "dc")


def test_free_port_is_not_in_use() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert not preflight.port_in_use(port)


def test_disk_too_full(tmp_path, monkeypatch, java_ok, no_daemons) -> None:
    monkeypatch.setattr(preflight, "free_bytes", lambda path: 300 * 1024 * 1024)
    with pytest.raises(DevClusterError) as err:
        DevCluster(tmp_path / "dc").up()
    message = str(err.value)
    assert "Only 300 MB free" in message
    assert "UNHEALTHY" in message
    assert "--dir" in message
    _assert_nothing_left(tmp_path / "dc")


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, created


def test_stale_pid_file_is_removed_and_reported(tmp_path, java_ok, monkeypatch, caplog) -> None:
    dc = DevCluster(tmp_path / "dc")
    pid, created = _dead_pid()
    pid_file = dc.layout.pid_file("namenode")
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text(f"{pid} {created}\n")
    row = dc.status()[0]
    assert (row["service"], row["pid"], row["alive"]) == ("namenode", pid, False)

    def stop_here(path):
        raise DevClusterError("stop after the pid files")

    monkeypatch.setattr(preflight, "check_disk", stop_here)
    with caplog.at_level(logging.WARNING), pytest.raises(DevClusterError, match="stop after"):
        dc.up()
    assert f"removing stale pid file {pid_file} (pid {pid} is not running)" in caplog.text
    assert not pid_file.exists()


def test_reused_pid_is_never_signalled(tmp_path) -> None:
    """A pid file whose pid now belongs to another process (here: this test) is stale."""
    dc = DevCluster(tmp_path / "dc")
    pid_file = dc.layout.pid_file("resourcemanager")
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text(f"{os.getpid()} 12345.0\n")
    assert not dc.is_running()
    dc.down()  # would SIGTERM pytest itself if it trusted the pid
    assert not pid_file.exists()


def test_half_running_cluster_is_refused(tmp_path, java_ok) -> None:
    dc = DevCluster(tmp_path / "dc")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        pid_file = dc.layout.pid_file("nm1")
        pid_file.parent.mkdir(parents=True)
        pid_file.write_text(f"{sleeper.pid} {psutil.Process(sleeper.pid).create_time()}\n")
        with pytest.raises(DevClusterError, match=r"only partly running \(nm1 alive"):
            dc.up()
        dc.down()
        assert sleeper.wait(timeout=10) is not None
        assert not pid_file.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.fixture
def fake_mvn(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    _stub(
        bin_dir / "mvn",
        """\
        echo "[ERROR] Failed to execute goal on project devcluster-jars: Could not resolve"
        echo "[ERROR] Could not transfer artifact from/to central: Network unreachable"
        exit 1
        """,
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_maven_failure_shows_its_output(
    tmp_path, monkeypatch, fake_mvn, java_ok, no_daemons
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # Independent of whether a real devcluster holds the ports right now.
    monkeypatch.setattr(preflight, "check_ports", lambda ports: None)
    root = tmp_path / "dc"
    with pytest.raises(DevClusterError) as err:
        DevCluster(root).up()
    message = str(err.value)
    assert f"Maven could not resolve Hadoop {maven.HADOOP_VERSION}'s jars (exit 1)" in message
    assert "Network unreachable" in message
    assert "Maven Central" in message
    assert not (root / "lib").exists()
    assert not any((tmp_path / "cache").rglob("*.jar"))
    _assert_nothing_left(root)


def test_maven_missing(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(maven.shutil, "which", lambda name: None)
    with pytest.raises(DevClusterError, match="apt-get install maven"):
        maven.resolve_jars("pom.xml", tmp_path / "lib", tmp_path)


def test_cli_prints_error_and_exits_1(tmp_path, fake_java, capsys) -> None:
    fake_java("11.0.22")
    assert main(["up", "--dir", str(tmp_path / "dc")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Java 11 at ")


def test_cli_status_of_a_stopped_cluster(tmp_path, capsys) -> None:
    assert main(["status", "--dir", str(tmp_path / "dc")]) == 3
    out = capsys.readouterr().out
    assert "nm2" in out and "no" in out


def test_port_offset_out_of_range(tmp_path, capsys) -> None:
    assert main(["up", "--dir", str(tmp_path / "dc"), "--port-offset", "60000"]) == 1
    assert "Port offset 60000 is out of range" in capsys.readouterr().err


def test_cli_logs_unknown_until_started(tmp_path, capsys) -> None:
    assert main(["logs", "nm1", "--dir", str(tmp_path / "dc")]) == 1
    assert "nm1 has no log yet" in capsys.readouterr().err


def test_daemon_dying_during_up_stops_the_rest(tmp_path, monkeypatch) -> None:
    """A stub `java`: the RM "crashes" at start, the other daemons idle; `up` must name the RM
    with its log tail and leave none of the others running."""
    home = tmp_path / "jdk"
    _stub(
        home / "bin" / "java",
        """\
        case "$*" in
          -version) echo 'openjdk version "17.0.15" 2025-04-15' >&2 ;;
          *" -format "*) ;;
          *-Dproc_resourcemanager*) echo "java.net.BindException: boom"; exit 1 ;;
          *) exec sleep 120 ;;
        esac
        """,
    )
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setattr(maven, "resolve_jars", lambda *args, **kwargs: None)
    monkeypatch.setattr(preflight, "check_ports", lambda ports: None)
    started = []
    real_start = process.start

    def recording_start(*args):
        started.append(real_start(*args))
        return started[-1]

    monkeypatch.setattr(process, "start", recording_start)
    root = tmp_path / "dc"
    dc = DevCluster(root, port_offset=30000)
    with pytest.raises(DevClusterError) as err:
        dc.up(timeout=60)
    message = str(err.value)
    assert "The resourcemanager exited during start-up; everything started has been stopped" in (
        message
    )
    assert "java.net.BindException: boom" in message
    assert len(started) == 5
    assert not [pid for pid in started if psutil.pid_exists(pid) and not _zombie(pid)]
    _assert_nothing_left(root)


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# -- `up --secure` without starting anything --------------------------------------------------


def test_token_lifetimes_need_secure(tmp_path, capsys) -> None:
    assert main(["up", "--dir", str(tmp_path / "dc"), "--token-renew-interval", "60"]) == 1
    assert "--token-renew-interval and --token-max-lifetime" in capsys.readouterr().err
    assert not (tmp_path / "dc").exists()


def test_token_max_lifetime_below_renew_interval(tmp_path, capsys) -> None:
    args = ["--token-renew-interval", "60", "--token-max-lifetime", "30"]
    assert main(["up", "--secure", "--dir", str(tmp_path / "dc"), *args]) == 1
    err = capsys.readouterr().err
    assert "--token-max-lifetime 30 is shorter than --token-renew-interval 60" in err
    assert not (tmp_path / "dc").exists()


def test_env_user_needs_a_secure_cluster(tmp_path, capsys) -> None:
    assert main(["env", "--dir", str(tmp_path / "dc"), "--user", "alice"]) == 1
    err = capsys.readouterr().err
    assert "`env --user alice` needs a secure devcluster" in err
    assert "up --secure" in err


def test_env_user_unknown_principal(tmp_path, capsys) -> None:
    root = tmp_path / "dc"
    root.mkdir()
    (root / "cluster.json").write_text(json.dumps({"security": Security().to_json()}))
    assert DevCluster(root).security == Security()
    assert main(["env", "--dir", str(root), "--user", "carol"]) == 1
    err = capsys.readouterr().err
    assert "No principal 'carol'" in err
    assert f"alice, bob, {getpass.getuser()}" in err


def test_secure_without_kerberos_tools(tmp_path, monkeypatch, java_ok, no_daemons) -> None:
    monkeypatch.setattr(kerberos.shutil, "which", lambda name, path=None: None)
    monkeypatch.setattr(preflight, "check_ports", lambda ports: None)
    root = tmp_path / "dc"
    with pytest.raises(DevClusterError) as err:
        DevCluster(root, security=True).up()
    message = str(err.value)
    assert "`krb5kdc` (Debian package krb5-kdc) is not installed" in message
    assert "apt-get install krb5-kdc krb5-admin-server krb5-user" in message
    _assert_nothing_left(root)


def test_localhost_must_resolve_back(monkeypatch) -> None:
    monkeypatch.setattr(kerberos.socket, "gethostbyaddr", lambda addr: ("vm", [], [addr]))
    with pytest.raises(DevClusterError) as err:
        kerberos.check_hosts()
    message = str(err.value)
    assert "127.0.0.1 back to 'vm'" in message
    assert "`127.0.0.1 localhost`" in message and "/etc/hosts" in message


def _props(path: Path) -> dict[str, str]:
    root = ElementTree.parse(path).getroot()
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def test_secure_config(tmp_path) -> None:
    """The keys `up --secure` writes, token lifetimes in ms; a plain `up` in the same dir takes
    them all away again."""
    layout = Layout(tmp_path, 0, secure=True)
    write_config(layout, "root", "/usr/bin", Security(60, 180))
    core, hdfs = _props(layout.conf / "core-site.xml"), _props(layout.conf / "hdfs-site.xml")
    yarn, nm2 = (
        _props(layout.conf / "yarn-site.xml"),
        _props(layout.nm_conf("nm2") / "yarn-site.xml"),
    )
    assert core["hadoop.security.authentication"] == "kerberos"
    assert core["hadoop.security.authorization"] == "true"
    assert core["fs.defaultFS"] == "hdfs://localhost:8020"
    rules = core["hadoop.security.auth_to_local"].splitlines()
    assert "RULE:[2:$1/$2@$0](nn/.*@DEVCLUSTER\\.TEST)s/.*/hdfs/" in rules
    assert rules[-1] == "RULE:[1:$1@$0](.*@DEVCLUSTER\\.TEST)s/@.*//"
    assert "DEFAULT" not in rules
    assert hdfs["dfs.namenode.delegation.token.renew-interval"] == "60000"
    assert hdfs["dfs.namenode.delegation.token.max-lifetime"] == "180000"
    assert hdfs["dfs.data.transfer.protection"] == "integrity"
    assert hdfs["dfs.namenode.kerberos.principal"] == "nn/_HOST@DEVCLUSTER.TEST"
    for props in (yarn, nm2):
        assert props["yarn.acl.enable"] == "true"
        assert props["yarn.resourcemanager.delegation.token.renew-interval"] == "60000"
        assert props["yarn.resourcemanager.delegation.token.max-lifetime"] == "180000"
        assert props["yarn.nodemanager.principal"] == "nm/localhost@DEVCLUSTER.TEST"
    assert nm2["yarn.nodemanager.address"] == "localhost:8141"
    assert _props(layout.conf / "hadoop-policy.xml")["security.datanode.protocol.acl"] == "hdfs"

    write_config(Layout(tmp_path), "root", "/usr/bin")
    assert "hadoop.security.authentication" not in _props(layout.conf / "core-site.xml")
    assert "yarn.acl.enable" not in _props(layout.nm_conf("nm1") / "yarn-site.xml")
    assert not (layout.conf / "hadoop-policy.xml").exists()


def test_hosts_secure_config_names_each_daemons_host(tmp_path) -> None:
    """`up --hosts --secure`'s keys and krb5.conf: the KDC on master at its address, every
    principal with its host's name (the RM checks an NM's against the name of the address it
    connects from: _HOST in the shared file, the host itself in each NM's)."""
    from tony_jupyter_devcluster import kerberos
    from tony_jupyter_devcluster.security import service_principals

    layout = Layout(tmp_path, 0, secure=True, hosts=True)
    write_config(layout, "root", "/usr/bin", Security())
    core, hdfs = _props(layout.conf / "core-site.xml"), _props(layout.conf / "hdfs-site.xml")
    yarn = _props(layout.conf / "yarn-site.xml")
    assert core["fs.defaultFS"] == "hdfs://master:8020"
    assert hdfs["dfs.namenode.kerberos.principal"] == "nn/_HOST@DEVCLUSTER.TEST"
    assert hdfs["dfs.datanode.kerberos.principal"] == "dn/_HOST@DEVCLUSTER.TEST"
    assert yarn["yarn.nodemanager.principal"] == "nm/_HOST@DEVCLUSTER.TEST"
    for i, (nm, host) in enumerate((("nm1", "worker1"), ("nm2", "worker2"), ("nm3", "worker3"))):
        props = _props(layout.nm_conf(nm) / "yarn-site.xml")
        assert props["yarn.nodemanager.principal"] == f"nm/{host}@DEVCLUSTER.TEST"
        assert props["yarn.nodemanager.address"] == f"{host}:{8041 + 100 * i}"
    workers = ("worker1", "worker2", "worker3")
    assert service_principals(True) == {
        "nn": ["nn/master@DEVCLUSTER.TEST"],
        "dn": [f"dn/{h}@DEVCLUSTER.TEST" for h in workers],
        "rm": ["rm/master@DEVCLUSTER.TEST"],
        "nm": [f"nm/{h}@DEVCLUSTER.TEST" for h in workers],
        "HTTP": [f"HTTP/{h}@DEVCLUSTER.TEST" for h in ("master", *workers)],
    }
    assert kerberos.kdc_address(layout) == ("198.18.0.11", 9088)
    assert kerberos.kdc_address(Layout(tmp_path, 0, secure=True)) == ("127.0.0.1", 9088)
    write_config(Layout(tmp_path, 0, secure=True), "root", "/usr/bin", Security())
    one_host = _props(layout.nm_conf("nm1") / "yarn-site.xml")
    assert one_host["yarn.nodemanager.principal"] == "nm/localhost@DEVCLUSTER.TEST"


@pytest.mark.parametrize("running_secure", [False, True], ids=["plain-running", "secure-running"])
def test_up_the_other_way_while_running_is_refused(tmp_path, running_secure) -> None:
    """Stand-in daemons (sleep) under the pid files; `up` with the other security must not
    start over them, nor stop them."""
    root = tmp_path / "dc"
    running = Security().to_json() if running_secure else None
    root.mkdir()
    (root / "cluster.json").write_text(json.dumps({"port_offset": 0, "security": running}))
    sleepers = []
    try:
        for name in SERVICE_NAMES:
            sleepers.append(subprocess.Popen(["sleep", "60"]))
            pid_file = Layout(root).pid_file(name)
            pid_file.parent.mkdir(exist_ok=True)
            created = psutil.Process(sleepers[-1].pid).create_time()
            pid_file.write_text(f"{sleepers[-1].pid} {created}\n")
        with pytest.raises(DevClusterError) as err:
            DevCluster(root, security=not running_secure).up()
        message = str(err.value)
        if running_secure:
            assert "already running with Kerberos (token_renew_interval_s=86400" in message
            assert "not without Kerberos" in message
        else:
            assert "already running without Kerberos, not with Kerberos (" in message
        assert "`tony-jupyter devcluster down` first" in message
        assert all(s.poll() is None for s in sleepers)
    finally:
        for s in sleepers:
            s.kill()
            s.wait()


def test_another_hadoop_release_resolves_with_the_same_poms(tmp_path, monkeypatch) -> None:
    """TONY_JUPYTER_DEVCLUSTER_HADOOP_VERSION: Maven is asked for that release's jars, cached
    apart from the pinned release's (dev/test-hadoop-versions)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    asked: list[str] = []

    def fake_copy(pom, cached, java_home, timeout, version):
        asked.append(pom)
        cached.mkdir(parents=True)
        (cached / ".resolved").write_text(version)

    monkeypatch.setattr(maven, "_copy_dependencies", fake_copy)
    maven.resolve_jars("pom.xml", tmp_path / "lib", tmp_path, version="3.3.6")
    assert "<hadoop.version>3.3.6</hadoop.version>" in asked[0]
    assert maven.HADOOP_VERSION not in asked[0].split("<hadoop.version>")[1].split("<")[0]
    assert (tmp_path / "lib").resolve().name.startswith("lib-3.3.6-")
    maven.resolve_jars("pom.xml", tmp_path / "lib2", tmp_path)
    assert (tmp_path / "lib2").resolve().name.startswith(f"lib2-{maven.HADOOP_VERSION}-")


def test_a_fourth_cluster_gets_ports_below_the_ephemeral_range(monkeypatch, tmp_path):
    """With the round offsets 0, 10000 and 20000 taken, the next cluster goes to 5000, not to
    30000, whose ports (38020-39871) lie where the kernel picks outgoing connections' ports."""
    from tony_jupyter_devcluster import preflight, testing
    from tony_jupyter_devcluster.config import Layout

    monkeypatch.delenv("TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # one process: every offset in order
    taken = {p for o in (0, 10000, 20000) for p in Layout(tmp_path, o, False).all_ports()}
    monkeypatch.setattr(preflight, "port_in_use", lambda port: port in taken)
    offset = testing._free_port_offset(tmp_path)
    assert offset == 5000
    ports = Layout(tmp_path, offset, False).all_ports()
    assert max(ports) < testing._ephemeral_low() and not taken & set(ports)


def test_pytest_xdist_processes_try_disjoint_offsets_first(monkeypatch):
    from tony_jupyter_devcluster import testing

    offsets = [0, 10000, 20000, 5000, 15000, 30000]
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    first = testing._this_workers_first(offsets)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    second = testing._this_workers_first(offsets)
    assert first[:3] == [0, 20000, 15000] and second[:3] == [10000, 5000, 30000]
    assert sorted(first) == sorted(second) == sorted(offsets)  # then the other's, if all taken
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert testing._this_workers_first(offsets) == offsets


def test_one_offset_given_to_xdist_processes_is_spread_apart(monkeypatch, tmp_path):
    """$TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET with two xdist processes: each its own ports."""
    from tony_jupyter_devcluster import testing
    from tony_jupyter_devcluster.config import Layout

    monkeypatch.setenv("TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET", "300")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    got = []
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        got.append(testing._free_port_offset(tmp_path))
    assert got == [300, 300 + testing.XDIST_STRIDE]
    first, second = (set(Layout(tmp_path, o, False).all_ports()) for o in got)
    assert not first & second
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert testing._free_port_offset(tmp_path) == 300


@pytest.mark.parametrize("where", ["after", "before"])
def test_exec_takes_dir_before_or_after_the_host(tmp_path, capsys, where) -> None:
    """`devcluster exec edge --dir D -- CMD` means what `exec --dir D edge -- CMD` means (as
    for `env`): the cluster in D, not the default one, and --dir not a word of the command."""
    root = tmp_path / "dc"
    root.mkdir()
    words = ["edge", "--dir", str(root)] if where == "after" else ["--dir", str(root), "edge"]
    assert main(["exec", *words, "--", "true"]) == 1
    err = capsys.readouterr().err
    assert f"The devcluster in {root} runs on this machine's own host" in err


def test_exec_refuses_an_unknown_option_before_the_command(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["exec", "edge", "--dri", str(tmp_path), "--", "true"])
    assert e.value.code == 2
    assert "unrecognized arguments: --dri" in capsys.readouterr().err
