"""The YARN AM JVM's class archive (tony_jupyter/am/yarn/classarchive.py), with the real JDK:
recorded by one AM, built once, mapped by the next; refused when the classpath's order would
matter; and every way it can be missing or bad leaves the JVM as it was."""

import glob
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tony_jupyter.am.yarn import classarchive, jvm

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK")


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node's user dir, and a classpath as yarn.application.classpath has it: a conf dir
    first, then a directory of jars by wildcard."""
    user_dir = tmp_path / "usercache" / "alice"
    user_dir.mkdir(parents=True)
    monkeypatch.setenv("LOCAL_USER_DIRS", str(user_dir))
    conf, lib = tmp_path / "conf", tmp_path / "lib"
    conf.mkdir()
    lib.mkdir()
    (conf / "core-site.xml").write_text("<configuration/>")
    for name in ("a.jar", "b.jar"):
        with zipfile.ZipFile(lib / name, "w") as z:
            z.writestr(f"{name}-resource.txt", "x")
    return user_dir, [str(conf), str(lib / "*")]


def libjvm() -> str:
    return jvm.jvm_path()


def record(a: classarchive.ClassArchive) -> None:
    """What the recording AM's JVM does: the classes it loads, listed."""
    subprocess.run(
        [a.java, f"-XX:DumpLoadedClassList={a.classlist}", "-cp", os.pathsep.join(a.jars)]
        + ["-version"],
        check=True,
        capture_output=True,
    )


def test_the_first_am_records_one_builds_and_the_next_maps_it(node):
    user_dir, cp = node
    first = classarchive.plan(cp, libjvm(), [], 1024)
    assert first.state == "recording" and first.archive is not None
    a = first.archive
    assert Path(a.home) == user_dir / classarchive.DIR_NAME
    assert first.classpath == cp  # a recording AM's classpath is as it was
    assert first.flags == (f"-XX:DumpLoadedClassList={a.classlist}",)
    # Meanwhile another AM on the node neither records nor maps.
    assert classarchive.plan(cp, libjvm(), [], 1024).state == "none (another AM is building it)"

    record(a)
    said = classarchive.build(a)
    assert said.startswith("built "), said
    assert a.archive.is_file() and not a.path("lock").exists() and not a.classlist.exists()

    later = classarchive.plan(cp, libjvm(), [], 1024)
    assert later.state == "mapped"
    assert later.flags == (f"-XX:SharedArchiveFile={a.archive}",)
    # The jars first (in the order JPype's expansion has them, then JPype's), the conf dir after.
    jars = glob.glob(cp[1] + ".jar")
    assert sorted(jars) == [str(Path(cp[1][:-1]) / n) for n in ("a.jar", "b.jar")]
    assert later.classpath == [*jars, classarchive.jpype_jar(), cp[0]]
    out = subprocess.run(
        [a.java, *later.flags, "-Xshare:on", "-cp", os.pathsep.join(later.classpath)]
        + ["-version"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "sharing" in out.stderr, out.stderr


def test_a_changed_jar_or_conf_dir_is_another_archive(node, tmp_path):
    _, cp = node
    a = classarchive.plan(cp, libjvm(), [], 1024).archive
    assert a is not None
    (tmp_path / "conf" / "yarn-site.xml").write_text("<configuration/>")
    b = classarchive.describe(cp, libjvm(), a.java)
    with zipfile.ZipFile(tmp_path / "lib" / "a.jar", "a") as z:
        z.writestr("more.txt", "y")
    c = classarchive.describe(cp, libjvm(), a.java)
    assert b is not None and c is not None
    assert len({a.key, b.key, c.key}) == 3


def test_a_conf_file_a_jar_has_too_refuses_the_archive_for_good(node, tmp_path):
    _, cp = node
    (tmp_path / "conf" / "a.jar-resource.txt").write_text("shadows the jar's")
    a = classarchive.plan(cp, libjvm(), [], 1024).archive
    assert a is not None
    record(a)
    said = classarchive.build(a)
    assert said.startswith("no archive: the classpath's order matters"), said
    assert "a.jar-resource.txt" in a.path("refused").read_text()
    assert not a.archive.exists()
    again = classarchive.plan(cp, libjvm(), [], 1024)
    assert again.state.startswith("none (refused") and again.classpath == cp and not again.flags


def test_a_directory_others_may_write_in_is_not_used(node):
    user_dir, cp = node
    home = user_dir / classarchive.DIR_NAME
    home.mkdir(mode=0o700)
    home.chmod(0o777)
    got = classarchive.plan(cp, libjvm(), [], 1024)
    assert got.state.endswith("is not this user's alone)") and got.classpath == cp
    assert not got.flags and not list(home.iterdir())


def test_off_small_ams_and_a_stale_lock(node):
    _, cp = node
    assert classarchive.plan(cp, libjvm(), ["-Xshare:off"], 1024).state == "off (-Xshare:off)"
    small = classarchive.plan(cp, libjvm(), [], 512)
    assert small.state.startswith("none (an AM of under") and not small.flags
    a = classarchive.plan(cp, libjvm(), [], 1024).archive
    assert a is not None
    old = a.path("lock").stat().st_mtime - classarchive.STALE_LOCK_S - 1
    os.utime(a.path("lock"), (old, old))  # its AM died long ago
    assert classarchive.plan(cp, libjvm(), [], 1024).state == "recording"
    classarchive.abandon(a)  # an AM that never started a container
    assert not a.path("lock").exists()


MAP = """
import sys
from tony_jupyter.am.yarn import jvm
plan = jvm.start(1024)
import jpype
print(plan.state, jpype.JClass("java.lang.System").getProperty("java.vm.info"))
"""


def test_an_archive_java_cannot_map_is_removed_and_the_jvm_starts_as_before(node):
    _, cp = node
    a = classarchive.plan(cp, libjvm(), [], 1024).archive
    assert a is not None
    classarchive.abandon(a)
    a.archive.write_bytes(os.urandom(1 << 16))  # damaged, or another JDK's
    env = {**os.environ, jvm.CLASSPATH_ENV: os.pathsep.join(cp)}
    out = subprocess.run(
        [sys.executable, "-c", MAP], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("not mapped (removed)"), out.stdout
    assert not a.archive.exists()
