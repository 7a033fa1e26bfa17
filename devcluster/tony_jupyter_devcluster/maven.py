"""Resolve the Hadoop jars from Maven Central with the poms shipped here.

Maven fills ``~/.m2``; the runtime closure of each pom is then copied once per machine into a
cache dir named by the pom's hash, and every cluster dir links ``lib`` (and ``apps``) to it. So a
fresh cluster dir (a pytest session) starts without running Maven, and a changed pin resolves anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from .config import Layout
from .errors import DevClusterError

_STAMP = ".resolved"
log = logging.getLogger("tony_jupyter_devcluster.cluster")


def _pom(pom_name: str) -> str:
    return resources.files(__package__).joinpath(pom_name).read_text(encoding="utf-8")


def _pinned_version() -> str:
    """The Hadoop version pinned in the packaged pom.xml, its one source."""
    match = re.search(r"<hadoop\.version>([^<]+)</hadoop\.version>", _pom("pom.xml"))
    assert match, "pom.xml pins <hadoop.version>"
    return match.group(1)


HADOOP_VERSION = _pinned_version()
# Another Hadoop release for a devcluster (`up` records it): the versions people run (3.3.6,
# 3.4.x) besides the pinned one, with the same poms.
VERSION_ENV = "TONY_JUPYTER_DEVCLUSTER_HADOOP_VERSION"
CLIENT_VERSION_ENV = "TONY_JUPYTER_DEVCLUSTER_CLIENT_VERSION"


# The oldest release line that runs on Java 11+ at all: 3.0-3.2 (and 2.x) need Java 8, which
# this project's machines do not have; 3.3 and 3.4 run on Java 17 with the JPMS flags of
# tony_jupyter/core/jpms.py (3.5 is the first release built for it).
OLDEST_SUPPORTED = (3, 3)
TESTED_VERSIONS = ("3.3.6", "3.4.3", HADOOP_VERSION)


def check_version(version: str) -> str:
    """``version`` if the devcluster can start it on this machine's Java 17, else an error
    naming the releases it can, raised before anything is downloaded or started."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    tested = ", ".join(TESTED_VERSIONS)
    if match is None:
        raise DevClusterError(
            f"Hadoop version {version!r} is not a release number like 3.4.3; the devcluster "
            f"runs Hadoop 3.3.x, 3.4.x and 3.5.x (tested: {tested})."
        )
    if (int(match.group(1)), int(match.group(2))) < OLDEST_SUPPORTED:
        raise DevClusterError(
            f"Hadoop {version} is not supported by the devcluster: releases before 3.3 run on "
            "Java 8 only, and this machine's JDK is 17 (Hadoop 3.3 and 3.4 run on it with "
            "--add-opens flags, 3.5 is built for it). Choose 3.3.x, 3.4.x or 3.5.x "
            f"(tested: {tested}); for Hadoop {version} use a Java 8 machine with that "
            "release's own tarball."
        )
    return version


def version_to_start(
    version: str | None = None, state: dict | None = None, formatted_in: Path | None = None
) -> str:
    """``version`` (`up --hadoop-version`), else ``$TONY_JUPYTER_DEVCLUSTER_HADOOP_VERSION``,
    else the one recorded in the cluster dir's ``state``, else the pinned release; checked with
    :func:`check_version`. ``formatted_in``: the dir of a cluster whose HDFS the recorded
    release formatted, which another release may refuse (NameNode layout versions differ)."""
    recorded = (state or {}).get("hadoop_version")
    chosen = check_version(version or os.environ.get(VERSION_ENV) or recorded or HADOOP_VERSION)
    if formatted_in is not None and recorded and chosen != recorded:
        raise DevClusterError(
            f"The devcluster in {formatted_in} was started with Hadoop {recorded}; its HDFS "
            f"metadata is that release's, which Hadoop {chosen} may open only through HDFS's "
            f"upgrade (or not at all). Start it again with "
            f"`--hadoop-version {recorded}`, or use another --dir for Hadoop {chosen} (or "
            f"remove {formatted_in} to start afresh)."
        )
    return chosen


def resolve_cluster_jars(layout: Layout, java_home: Path, version: str) -> None:
    """The daemons' jars (``lib``) and the example applications' (``apps``) of ``version``;
    with ``$TONY_JUPYTER_DEVCLUSTER_CLIENT_VERSION``, another release's jars as the
    applications' Hadoop client (``client-lib``: the AM's), as a newer client on an older
    cluster has them; without, the daemons' own."""
    log.info("resolving Hadoop %s jars through Maven", version)
    resolve_jars("pom.xml", layout.lib, java_home, version=version)
    resolve_jars("apps-pom.xml", layout.apps, java_home, version=version)
    client = os.environ.get(CLIENT_VERSION_ENV)
    link = layout.client_lib
    if client and client != version:
        log.info("the applications' Hadoop client: %s", client)
        # the same jars as a cluster of that release has in lib/: one copy in the cache
        resolve_jars("pom.xml", link, java_home, version=check_version(client), cache_name="lib")
    elif link.is_symlink():
        link.unlink()


def _pom_for(pom_name: str, version: str) -> str:
    return re.sub(
        r"<hadoop\.version>[^<]+</hadoop\.version>",
        f"<hadoop.version>{version}</hadoop.version>",
        _pom(pom_name),
    )


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tony-jupyter" / "devcluster"


def resolve_jars(
    pom_name: str,
    link: Path,
    java_home: Path,
    timeout: float = 1200,
    version: str = HADOOP_VERSION,
    cache_name: str | None = None,
) -> None:
    """Make ``link`` a symlink to a directory holding the runtime closure of ``pom_name``
    (with Hadoop ``version``), cached as ``cache_name`` (default: the link's name)."""
    pom = _pom_for(pom_name, version)
    digest = hashlib.sha256(pom.encode()).hexdigest()[:16]
    cached = cache_root() / f"{cache_name or link.name}-{version}-{digest}"
    if not (cached / _STAMP).is_file():
        _copy_dependencies(pom, cached, java_home, timeout, version)
    if link.is_symlink() and link.resolve() == cached.resolve():
        return
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    else:
        link.unlink(missing_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(cached, target_is_directory=True)


def _copy_dependencies(
    pom: str, cached: Path, java_home: Path, timeout: float, version: str
) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise DevClusterError(
            "Maven (`mvn`) is not on PATH. The devcluster downloads Hadoop's jars from Maven "
            "Central into ~/.m2 with it. Install it (Debian/Ubuntu: `apt-get install maven`) "
            "and run `up` again."
        )
    # Build beside the final dir and rename it into place, so that a concurrent `up` or an
    # interrupted one never leaves a half-filled cache entry behind.
    work = cached.parent / f".{cached.name}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "pom.xml").write_text(pom, encoding="utf-8")
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={work}",
    ]
    env = dict(os.environ, JAVA_HOME=str(java_home))
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as err:
        shutil.rmtree(work, ignore_errors=True)
        raise DevClusterError(
            f"Maven did not finish resolving Hadoop {version} within {timeout:.0f} s. "
            "Check that https://repo.maven.apache.org is reachable (or a mirror is set in "
            "~/.m2/settings.xml) and run `up` again; jars already downloaded stay in ~/.m2."
        ) from err
    if proc.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise DevClusterError(
            f"Maven could not resolve Hadoop {version}'s jars (exit {proc.returncode}). "
            "Check network access to Maven Central (or the mirror in ~/.m2/settings.xml), then "
            f"run `up` again; to retry by hand: `{' '.join(cmd)}`. Maven said:\n{tail}"
        )
    (work / _STAMP).write_text(version)
    try:
        work.rename(cached)
    except OSError:
        # Another `up` got there first with the same jars.
        shutil.rmtree(work, ignore_errors=True)
