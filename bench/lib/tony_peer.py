"""TonY itself (LinkedIn's ``com.linkedin.tony:tony-core`` 0.4.7, its last release on Maven
Central) submitting bench/lib/workload.py to the devcluster, beside tony-jupyter.

TonY 0.4.7 is built against Hadoop 2.10. On the devcluster's Hadoop 3.5 its client submits
fine, but its ApplicationMaster dies at start with

    java.lang.NoSuchMethodError: 'void com.linkedin.tony.ApplicationMaster$1.setExpireInterval(int)'

(Hadoop 3 changed ``AbstractLivelinessMonitor.setExpireInterval`` from ``int`` to ``long``;
TonY's AM subclasses it for task heartbeats), and the YARN application then stays RUNNING with
no tasks until killed. So the bench puts one shim class first on TonY's containers' classpath:
Hadoop 3.5's own ``AbstractLivelinessMonitor``, compiled from its published sources with the
``int`` overload added back (see ``_shim``). Nothing else of TonY or Hadoop is changed.

The jars come from Maven Central through ``bench/lib/tony/pom.xml`` (TonY without its Hadoop 2.10
dependencies, the Azkaban classes its ``TonyClient.main`` calls, zip4j, and protobuf 2.5, which
TonY's RPC needs and Hadoop 3.5 no longer brings), cached once per machine like the
devcluster's own jars.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

POM = Path(__file__).with_name("tony") / "pom.xml"
TONY_VERSION = "0.4.7"
SHIM_CLASS = "org/apache/hadoop/yarn/util/AbstractLivelinessMonitor"
SHIM_ANCHOR = "  protected void setExpireInterval(long expireInterval) {"
SHIM_OVERLOAD = (
    "  protected void setExpireInterval(int expireInterval) {  // Hadoop 2's signature, for TonY\n"
    "    setExpireInterval((long) expireInterval);\n"
    "  }\n\n"
)
_STAMP = ".resolved"


def _cache_dir(hadoop_version: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    digest = hashlib.sha256(POM.read_bytes() + SHIM_OVERLOAD.encode()).hexdigest()[:12]
    return Path(base) / "tony-jupyter" / "bench" / f"tony-{TONY_VERSION}-{hadoop_version}-{digest}"


def _mvn(args: list[str], java_home: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Maven (`mvn`) is not on PATH; the TonY side fetches TonY with it")
    env = dict(os.environ, JAVA_HOME=str(java_home))
    proc = subprocess.run(
        [mvn, "-q", "-B", *args], capture_output=True, text=True, timeout=900, env=env
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise RuntimeError(f"mvn {' '.join(args)} failed ({proc.returncode}):\n{tail}")


def _shim(cluster, work: Path) -> Path:
    """Hadoop's AbstractLivelinessMonitor (the cluster's version, from its sources jar) plus
    ``setExpireInterval(int)``, compiled against the cluster's jars into one small jar."""
    version = cluster.hadoop_version
    _mvn(
        [
            "dependency:copy",
            f"-Dartifact=org.apache.hadoop:hadoop-yarn-common:{version}:jar:sources",
            f"-DoutputDirectory={work}",
        ],
        cluster.java_home,
    )
    sources = work / f"hadoop-yarn-common-{version}-sources.jar"
    with zipfile.ZipFile(sources) as z:
        text = z.read(f"{SHIM_CLASS}.java").decode()
    sources.unlink()
    if SHIM_ANCHOR not in text:
        raise RuntimeError(f"Hadoop {version}'s {SHIM_CLASS} has no setExpireInterval(long)")
    src = work / "src" / f"{SHIM_CLASS}.java"
    src.parent.mkdir(parents=True)
    src.write_text(text.replace(SHIM_ANCHOR, SHIM_OVERLOAD + SHIM_ANCHOR))
    classes = work / "classes"
    javac = cluster.java_home / "bin" / "javac"
    subprocess.run(
        [str(javac), "-nowarn", "-d", str(classes), "-cp", ":".join(cluster.hadoop_classpath)]
        + [str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    jar = work / "tony-hadoop3-shim.jar"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    jar.write_bytes(buf.getvalue())
    shutil.rmtree(work / "src")
    shutil.rmtree(classes)
    return jar


def jars(cluster) -> list[Path]:
    """TonY's jars and the shim, resolved once per machine (then read from the cache)."""
    cached = _cache_dir(cluster.hadoop_version)
    if not (cached / _STAMP).is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{cached.name}.", dir=cached.parent))
        try:
            shutil.copy(POM, work / "pom.xml")
            _mvn(
                [
                    "-f",
                    str(work / "pom.xml"),
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={work}",
                ],
                cluster.java_home,
            )
            (work / "pom.xml").unlink()
            _shim(cluster, work)
            (work / _STAMP).write_text(TONY_VERSION)
            try:
                work.rename(cached)
            except OSError:  # another run got there first
                pass
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return sorted(cached.glob("*.jar"))


def command(cluster, workers: int, executes: Path, python: str, env: dict[str, str]) -> list[str]:
    """TonY's own client (``TonyClient.main``), asking what tony-jupyter's side asks: ``workers``
    1-vcore 1 GiB workers, no ps, a 1 GiB AM, the same interpreter and script."""
    jar_list = jars(cluster)
    flags = " ".join(cluster.jvm_flags)  # Hadoop 3.5 on Java 17, as every devcluster JVM gets
    conf = {
        "tony.worker.instances": workers,
        "tony.worker.memory": "1g",
        "tony.worker.vcores": 1,
        "tony.ps.instances": 0,
        "tony.am.memory": "1g",
        "tony.application.name": "tony-bench-tony-peer",
        "tony.application.security.enabled": "false",  # the devcluster has no Kerberos
        "tony.history.location": "/tmp/tony-bench-history",
        # TonY's jars (and the shim) are uploaded with the job, as its own CLI does.
        "tony.containers.resources": ",".join(str(j) for j in jar_list),
        "tony.task.am.jvm.opts": f"-Xmx256m {flags}",
        "tony.task.executor.jvm.opts": f"-Xmx256m {flags}",
    }
    cmd = [
        str(cluster.java_home / "bin" / "java"),
        *cluster.jvm_flags,
        "-cp",
        ":".join([*(str(j) for j in jar_list), *cluster.hadoop_classpath]),
        "com.linkedin.tony.TonyClient",
        "--executes",
        str(executes),
        "--python_binary_path",
        python,
    ]
    for k, v in env.items():
        cmd += ["--shell_env", f"{k}={v}"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd


APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")


def app_id(client_log: Path) -> str | None:
    try:
        m = APP_ID.search(client_log.read_text(errors="replace"))
    except OSError:
        return None
    return m.group(1) if m else None
