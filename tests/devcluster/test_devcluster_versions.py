"""`devcluster up --hadoop-version`: which releases it starts, where their jars go, and the
refusals, each without Maven or a JVM (a stub `mvn` that must not run, a fake copy step)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tony_jupyter_devcluster import DevCluster, DevClusterError, maven, preflight, process
from tony_jupyter_devcluster.cli import main
from tony_jupyter_devcluster.config import Layout


@pytest.fixture
def mvn_must_not_run(tmp_path, monkeypatch) -> Path:
    """A `mvn` first on PATH that leaves a mark if it runs; no daemon may start either."""
    mark = tmp_path / "mvn-ran"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def refuse(*args, **kwargs):
        raise AssertionError("a daemon was started")

    monkeypatch.setattr(process, "start", refuse)
    return mark


@pytest.mark.parametrize("version", ["3.1.4", "3.2.4", "2.10.2"])
def test_a_release_that_needs_java_8_is_refused_before_anything(
    version, tmp_path, mvn_must_not_run, capsys
) -> None:
    root = tmp_path / "dc"
    assert main(["up", "--dir", str(root), "--hadoop-version", version]) == 1
    message = capsys.readouterr().err
    assert f"error: Hadoop {version} is not supported by the devcluster" in message
    assert "releases before 3.3 run on Java 8 only, and this machine's JDK is 17" in message
    assert "Choose 3.3.x, 3.4.x or 3.5.x (tested: 3.3.6, 3.4.3, " in message
    assert not mvn_must_not_run.exists()
    assert not root.exists()
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("version", ["3.4", "latest", "3.4.3-SNAPSHOT", " 3.4.3"])
def test_a_version_that_is_no_release_number_is_refused(
    version, tmp_path, mvn_must_not_run, capsys
) -> None:
    root = tmp_path / "dc"
    assert main(["up", "--dir", str(root), "--hadoop-version", version]) == 1
    message = capsys.readouterr().err
    assert f"Hadoop version {version!r} is not a release number like 3.4.3" in message
    assert "the devcluster runs Hadoop 3.3.x, 3.4.x and 3.5.x" in message
    assert not mvn_must_not_run.exists() and not root.exists()


def test_the_environment_variable_is_checked_as_the_flag_is(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(maven.VERSION_ENV, "3.2.4")
    with pytest.raises(DevClusterError, match="Hadoop 3.2.4 is not supported"):
        maven.version_to_start()
    # The flag wins over the variable, which wins over what the dir recorded.
    assert maven.version_to_start("3.4.3") == "3.4.3"
    monkeypatch.setenv(maven.VERSION_ENV, "3.3.6")
    assert maven.version_to_start(None, {"hadoop_version": "3.4.3"}) == "3.3.6"
    monkeypatch.delenv(maven.VERSION_ENV)
    assert maven.version_to_start(None, {"hadoop_version": "3.4.3"}) == "3.4.3"
    assert maven.version_to_start() == maven.HADOOP_VERSION


def test_another_release_on_hdfs_formatted_by_one_is_refused(tmp_path) -> None:
    root = tmp_path / "dc"
    with pytest.raises(DevClusterError) as err:
        maven.version_to_start("3.5.0", {"hadoop_version": "3.3.6"}, root)
    message = str(err.value)
    assert f"The devcluster in {root} was started with Hadoop 3.3.6" in message
    assert "Start it again with `--hadoop-version 3.3.6`, or use another --dir" in message
    # Not formatted yet (an `up` that failed early): nothing to protect.
    assert maven.version_to_start("3.5.0", {"hadoop_version": "3.3.6"}, None) == "3.5.0"


def test_a_running_cluster_of_another_release_is_named(tmp_path) -> None:
    state = {"port_offset": 0, "hadoop_version": "3.3.6", "security": None}
    wanted = {"port_offset": 0, "hosts": False, "security": None, "tls": False}
    preflight.check_same_cluster(tmp_path, state, {**wanted, "hadoop_version": None})
    preflight.check_same_cluster(tmp_path, state, {**wanted, "hadoop_version": "3.3.6"})
    with pytest.raises(DevClusterError) as err:
        preflight.check_same_cluster(tmp_path, state, {**wanted, "hadoop_version": "3.4.3"})
    assert f"The devcluster in {tmp_path} is already running Hadoop 3.3.6, not 3.4.3" in str(
        err.value
    )


@pytest.fixture
def fake_copy(tmp_path, monkeypatch) -> list[str]:
    """Maven's copy step, faked: records the version of each resolve that was not cached."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copied: list[str] = []

    def copy(pom, cached, java_home, timeout, version):
        copied.append(version)
        cached.mkdir(parents=True)
        (cached / f"hadoop-common-{version}.jar").write_text("")
        (cached / ".resolved").write_text(version)

    monkeypatch.setattr(maven, "_copy_dependencies", copy)
    return copied


def test_each_release_has_its_own_jar_dir_and_the_client_its_own(
    tmp_path, fake_copy, monkeypatch
) -> None:
    old, new = Layout(tmp_path / "dc-old"), Layout(tmp_path / "dc-new")
    maven.resolve_cluster_jars(old, tmp_path, "3.3.6")
    maven.resolve_cluster_jars(new, tmp_path, "3.4.3")
    assert old.lib.resolve() != new.lib.resolve()
    assert old.lib.resolve().parent == maven.cache_root()
    assert old.lib.resolve().name.startswith("lib-3.3.6-")
    assert new.lib.resolve().name.startswith("lib-3.4.3-")
    assert (old.lib / "hadoop-common-3.3.6.jar").is_file()
    assert (new.lib / "hadoop-common-3.4.3.jar").is_file()
    assert fake_copy.count("3.3.6") == 2  # lib and apps, once
    maven.resolve_cluster_jars(Layout(tmp_path / "dc-again"), tmp_path, "3.3.6")
    assert fake_copy.count("3.3.6") == 2  # cached: a second cluster of it resolves nothing
    # Without a client release the applications (the AM) use the daemons' own jars.
    assert old.classpath() == [str(old.conf), f"{old.lib}/*"]
    monkeypatch.setenv(maven.CLIENT_VERSION_ENV, maven.HADOOP_VERSION)
    maven.resolve_cluster_jars(old, tmp_path, "3.3.6")
    # the jars a cluster of that release runs on: one copy in the cache
    assert old.client_lib.resolve().name.startswith(f"lib-{maven.HADOOP_VERSION}-")
    assert fake_copy.count(maven.HADOOP_VERSION) == 1
    new_cluster = Layout(tmp_path / "dc-3.5")
    maven.resolve_cluster_jars(new_cluster, tmp_path, maven.HADOOP_VERSION)
    assert fake_copy.count(maven.HADOOP_VERSION) == 2  # its apps only: lib/ is the client's
    assert new_cluster.lib.resolve() == old.client_lib.resolve()
    assert old.classpath() == [str(old.conf), f"{old.client_lib}/*"]
    assert old.classpath("resourcemanager") == [str(old.conf), f"{old.lib}/*"]
    monkeypatch.delenv(maven.CLIENT_VERSION_ENV)
    maven.resolve_cluster_jars(old, tmp_path, "3.3.6")
    assert not old.client_lib.is_symlink()
    assert old.classpath() == [str(old.conf), f"{old.lib}/*"]


def test_status_and_env_say_the_recorded_release(tmp_path, capsys) -> None:
    root = tmp_path / "dc"
    Layout(root).state_file.parent.mkdir(parents=True)
    state = {"hadoop_version": "3.3.6", "java_home": str(tmp_path), "port_offset": 30000}
    Layout(root).state_file.write_text(json.dumps(state))
    assert main(["status", "--dir", str(root)]) == 3  # recorded, not running
    assert "hadoop: 3.3.6" in capsys.readouterr().out
    assert DevCluster(root).env()["TONY_DEVCLUSTER_HADOOP_VERSION"] == "3.3.6"
