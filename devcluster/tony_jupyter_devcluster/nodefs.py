"""The NodeManagers' local filesystem: Hadoop's, but setting a file's permissions without a
process of its own (``java/NodeLocalFs.java``), compiled at ``up`` into the cluster's dir.

A NodeManager sets the permissions of every file it localizes, and every file of an archive it
unpacks (a packed venv: tens of thousands). Hadoop does that with one system call per file
through its native library, ``libhadoop.so``, on the clusters our users have; no Maven artifact
ships that library, and without it Hadoop forks a ``chmod`` per file: 2.4 ms a file measured
here, 100-180 s for the hosts tests' TensorFlow venv. ``NodeLocalFs`` makes it one system call
again (0.02 ms a file), so the devcluster's localizing costs what a real cluster's does. Only
the NodeManagers use it (their own ``core-site.xml``); where ``javac`` is missing the
NodeManagers keep Hadoop's own, slower but the same.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

CLASS = "devcluster.NodeLocalFs"
KEY = "fs.AbstractFileSystem.file.impl"
_SOURCE = "NodeLocalFs.java"


def classes(root: Path) -> Path:
    """Where the compiled classes go: a dir on the NodeManagers' classpath."""
    return root / "nodefs"


def compiled(root: Path) -> bool:
    return (classes(root) / "devcluster" / "NodeLocalFs.class").is_file()


def build(root: Path, lib: Path, java_home: Path) -> bool:
    """Compile NodeLocalFs against the cluster's Hadoop jars (``lib``) into ``classes(root)``,
    unless the same source was compiled there already. False, with a warning, where it cannot."""
    source = resources.files(__package__).joinpath("java").joinpath(_SOURCE).read_bytes()
    stamp = hashlib.sha256(source + str(lib.resolve()).encode()).hexdigest()[:16]
    out = classes(root)
    if compiled(root) and (out / "stamp").read_text(errors="replace") == stamp:
        return True
    javac = java_home / "bin" / "javac"
    if not javac.exists():
        log.warning("no %s: the NodeManagers fork a chmod per file they localize", javac)
        return False
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / _SOURCE).write_bytes(source)
    cmd = [str(javac), "-nowarn", "-cp", f"{lib}/*", "-d", str(out), str(out / _SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log.warning(
            "could not compile %s (%s): the NodeManagers fork a chmod per file they localize",
            _SOURCE,
            done.stderr.strip()[-500:],
        )
        shutil.rmtree(out, ignore_errors=True)
        return False
    (out / "stamp").write_text(stamp)
    return True
