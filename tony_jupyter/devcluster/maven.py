"""Resolve the Hadoop jars from Maven Central into ``DIR/lib`` with the ``pom.xml`` shipped here."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from .errors import DevClusterError


def _pinned_version() -> str:
    """The Hadoop version pinned in the packaged pom.xml, its one source."""
    pom = resources.files(__package__).joinpath("pom.xml").read_text(encoding="utf-8")
    match = re.search(r"<hadoop\.version>([^<]+)</hadoop\.version>", pom)
    assert match, "pom.xml pins <hadoop.version>"
    return match.group(1)


HADOOP_VERSION = _pinned_version()

_STAMP = ".resolved"


def resolve_jars(
    pom_name: str, root: Path, lib: Path, java_home: Path, timeout: float = 1200
) -> None:
    """Fill ``lib`` with the runtime closure of the packaged ``pom_name``, unless it already
    holds exactly that.

    The stamp file records a hash of the pom, so a changed pin re-resolves and an unchanged one
    costs nothing (``up`` with warm jars never runs Maven).
    """
    pom = resources.files(__package__).joinpath(pom_name).read_text(encoding="utf-8")
    digest = hashlib.sha256(pom.encode()).hexdigest()
    stamp = lib / _STAMP
    if stamp.is_file() and stamp.read_text() == digest:
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise DevClusterError(
            "Maven (`mvn`) is not on PATH. The devcluster downloads Hadoop's jars from Maven "
            "Central into ~/.m2 with it. Install it (Debian/Ubuntu: `apt-get install maven`) "
            "and run `up` again."
        )
    root.mkdir(parents=True, exist_ok=True)
    # Maven needs the pom as a file; keep a copy beside the jars so the pin is visible in DIR.
    pom_path = root / pom_name
    pom_path.write_text(pom, encoding="utf-8")
    if lib.exists():
        shutil.rmtree(lib)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom_path),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={lib}",
    ]
    env = dict(os.environ, JAVA_HOME=str(java_home))
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise DevClusterError(
            f"Maven did not finish resolving Hadoop {HADOOP_VERSION} within {timeout:.0f} s. "
            "Check that https://repo.maven.apache.org is reachable (or a mirror is set in "
            "~/.m2/settings.xml) and run `up` again; jars already downloaded stay in ~/.m2."
        ) from err
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise DevClusterError(
            f"Maven could not resolve Hadoop {HADOOP_VERSION}'s jars (exit {proc.returncode}). "
            "Check network access to Maven Central (or the mirror in ~/.m2/settings.xml), then "
            f"run `up` again; to retry by hand: `{' '.join(cmd)}`. Maven said:\n{tail}"
        )
    stamp.write_text(digest)
