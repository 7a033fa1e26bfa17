"""Resolve the Hadoop jars from Maven Central with the poms shipped here.

Maven fills ``~/.m2``; the runtime closure of each pom is then copied once per machine into a
cache dir named by the pom's hash, and every cluster dir links ``lib`` (and ``apps``) to it. So a
fresh cluster dir (a pytest session) starts without running Maven, and a changed pin resolves anew.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from .errors import DevClusterError

_STAMP = ".resolved"


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


def version_to_start() -> str:
    """``$TONY_JUPYTER_DEVCLUSTER_HADOOP_VERSION``, else the pinned release."""
    return os.environ.get(VERSION_ENV) or HADOOP_VERSION


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
) -> None:
    """Make ``link`` a symlink to a directory holding the runtime closure of ``pom_name``
    (with Hadoop ``version``)."""
    pom = _pom_for(pom_name, version)
    digest = hashlib.sha256(pom.encode()).hexdigest()[:16]
    cached = cache_root() / f"{link.name}-{version}-{digest}"
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
