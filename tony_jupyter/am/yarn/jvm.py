"""Start the AM's JVM (JPype) on the cluster's own Hadoop classpath.

Only the AM, inside its YARN container, starts a JVM; the notebook never does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ...core.jpms import JPMS_FLAGS
from . import classarchive

# The AM's JVM only runs two RPC clients; keep it small so the AM container stays small.
HEAP_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# The AM's own settings (not its executors'): its JVM's classpath and extra flags.
CLASSPATH_ENV, JVM_OPTS_ENV = "TONY_HADOOP_CLASSPATH", "TONY_AM_JVM_OPTS"


def hadoop_classpath() -> list[str]:
    """CLASSPATH (the client sets it from yarn.application.classpath), else `hadoop classpath`."""
    for var in (CLASSPATH_ENV, "CLASSPATH"):
        if os.environ.get(var):
            return [p for p in os.environ[var].split(os.pathsep) if p]
    hadoop = shutil.which("hadoop")
    if hadoop:
        out = subprocess.run(
            [hadoop, "classpath", "--glob"], capture_output=True, text=True, check=True
        )
        return [p for p in out.stdout.strip().split(os.pathsep) if p]
    raise RuntimeError(
        "no Hadoop classpath for the AM's JVM: set CLASSPATH (yarn.application.classpath) or "
        "put `hadoop` on PATH"
    )


def jvm_path() -> str:
    import jpype

    home = os.environ.get("JAVA_HOME")
    if home:
        for rel in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so"):
            if (Path(home) / rel).exists():
                return str(Path(home) / rel)
    return jpype.getDefaultJVMPath()


def start(am_memory_mb: int = 0) -> classarchive.Plan | None:
    """Start the JVM, on the node's class archive where there is one (classarchive.py); the
    archive's plan, or None if the JVM ran already."""
    import jpype

    if jpype.isJVMStarted():
        return None
    extra = os.environ.get(JVM_OPTS_ENV, "").split()
    krb5 = os.environ.get("KRB5_CONFIG")
    if krb5 and os.path.isfile(krb5):  # a krb5.conf elsewhere than /etc (as the notebook's)
        extra.append(f"-Djava.security.krb5.conf={krb5}")
    libjvm = jvm_path()
    plan = classarchive.plan(hadoop_classpath(), libjvm, extra, am_memory_mb)
    jpype.startJVM(
        libjvm,
        *JPMS_FLAGS,
        *HEAP_FLAGS,
        *plan.flags,
        *extra,
        classpath=plan.classpath,
        convertStrings=True,
    )
    info = str(jpype.JClass("java.lang.System").getProperty("java.vm.info"))
    if plan.archive is not None and plan.state == "mapped" and "sharing" not in info:
        classarchive.unmapped(plan.archive)
        plan = classarchive.Plan(plan.flags, plan.classpath, "not mapped (removed)")
    return plan


def cls(name: str):
    import jpype

    return jpype.JClass(name)


class Classes:
    """The Hadoop classes the provider uses, looked up once the JVM runs."""

    def __init__(self) -> None:
        c = cls
        self.YarnConfiguration = c("org.apache.hadoop.yarn.conf.YarnConfiguration")
        self.AMRMClient = c("org.apache.hadoop.yarn.client.api.AMRMClient")
        self.ContainerRequest = c("org.apache.hadoop.yarn.client.api.AMRMClient$ContainerRequest")
        self.NMClient = c("org.apache.hadoop.yarn.client.api.NMClient")
        records = "org.apache.hadoop.yarn.api.records."
        for name in (
            "Resource",
            "Priority",
            "FinalApplicationStatus",
            "LocalResource",
            "LocalResourceType",
            "LocalResourceVisibility",
            "URL",
            "ContainerLaunchContext",
        ):
            setattr(self, name, c(records + name))
        self.HashMap = c("java.util.HashMap")
        self.ArrayList = c("java.util.ArrayList")
        self.URI = c("java.net.URI")
        self.Path = c("org.apache.hadoop.fs.Path")
        self.FsPermission = c("org.apache.hadoop.fs.permission.FsPermission")
        self.RenameNone = c("org.apache.hadoop.fs.Options$Rename").NONE  # fail if dst exists
        # Secure clusters: the job's delegation tokens (credentials.py).
        self.UserGroupInformation = c("org.apache.hadoop.security.UserGroupInformation")
        self.Credentials = c("org.apache.hadoop.security.Credentials")
        self.Token = c("org.apache.hadoop.security.token.Token")
        self.Text = c("org.apache.hadoop.io.Text")
        self.DataOutputBuffer = c("org.apache.hadoop.io.DataOutputBuffer")
        self.ByteBuffer = c("java.nio.ByteBuffer")
