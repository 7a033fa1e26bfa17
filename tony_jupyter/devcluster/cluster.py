"""`DevCluster`: a pseudo-distributed HDFS + YARN made of separate JVMs on 127.0.0.1."""

from __future__ import annotations

import getpass
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import requests

from ..launcher.yarn.jvm import JPMS_FLAGS
from . import kerberos, maven, preflight, process, ready
from .config import (
    KDC,
    MAX_PORT_OFFSET,
    NODEMANAGERS,
    SERVICE_NAMES,
    Layout,
    service,
    write_config,
)
from .errors import DevClusterError
from .security import USERS, Security

log = logging.getLogger(__name__)

# Any JVM that runs Hadoop code (daemons, containers, the JPype AM) needs the JPMS flags of
# Hadoop's own launcher; one list, kept beside the AM that also uses it.
JVM_FLAGS = JPMS_FLAGS

# Daemons only. Measured here on 2 cores (start-up CPU-seconds and RSS summed over the five):
# C1 only halves start-up CPU (about 21 s against 45 s), and the RM's load never needs C2; the
# serial collector with a small initial heap and tight free ratios gives memory back, about
# 800 MB RSS in all against 1,000 MB with G1 and 1,230 MB with default ratios.
_DAEMON_JVM_OPTS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xms32m",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=30",
)


def default_dir() -> Path:
    env_dir = os.environ.get("TONY_JUPYTER_DEVCLUSTER_DIR")
    return Path(env_dir) if env_dir else Path.home() / ".tony-jupyter" / "devcluster"


def _state(root: Path) -> dict:
    """What `up` recorded in ``root``: the JDK, Hadoop version, port offset and security."""
    try:
        return json.loads(Layout(root).state_file.read_text())
    except (FileNotFoundError, ValueError):
        return {}


class DevCluster:
    """One devcluster rooted at ``dir``; every method works from its pid and state files, so
    separate processes (CLI, pytest, a notebook) can manage the same cluster."""

    def __init__(
        self,
        dir: Path | None = None,
        port_offset: int | None = None,
        security: Security | bool | None = None,
    ) -> None:
        """``port_offset`` shifts every port (e.g. 10000: RM on 18088) so that clusters can run
        side by side; by default the offset the cluster in ``dir`` was started with, else
        ``$TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET``, else 0. ``security``: True or a
        :class:`Security` for Kerberos (`up --secure`), False for none; by default what the
        cluster in ``dir`` was started with, else none."""
        root = Path(dir or default_dir()).expanduser().resolve()
        if security is None:
            recorded = _state(root).get("security")
            security = Security.from_json(recorded) if recorded else False
        self.security: Security | None = Security() if security is True else (security or None)
        if port_offset is None:
            env_offset = os.environ.get("TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET", "0")
            try:
                port_offset = int(_state(root).get("port_offset", env_offset))
            except ValueError:
                raise DevClusterError(
                    f"TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET={env_offset!r} is not a number; set it "
                    "to a multiple of 1000 such as 10000, or unset it."
                ) from None
        if not 0 <= port_offset <= MAX_PORT_OFFSET:
            raise DevClusterError(
                f"Port offset {port_offset} is out of range: it must be between 0 and "
                f"{MAX_PORT_OFFSET} so that every port stays below 65536; use a multiple of "
                "1000, e.g. 10000."
            )
        self.layout = Layout(root, port_offset, secure=self.security is not None)
        self.user = getpass.getuser()
        self._http: requests.Session | None = None

    # -- addresses and classpath ----------------------------------------------------------

    @property
    def dir(self) -> Path:
        return self.layout.root

    @property
    def conf_dir(self) -> Path:
        return self.layout.conf

    @property
    def rm_url(self) -> str:
        return f"http://{self.layout.host}:{self.layout.ports('resourcemanager')['http']}"

    @property
    def webhdfs_url(self) -> str:
        return f"http://{self.layout.host}:{self.layout.ports('namenode')['http']}"

    @property
    def fs_default_name(self) -> str:
        return f"hdfs://{self.layout.host}:{self.layout.ports('namenode')['rpc']}"

    @property
    def hadoop_classpath(self) -> list[str]:
        """For any JVM that talks to the cluster: the conf dir, then every Hadoop jar."""
        return self.layout.classpath()

    @property
    def apps_classpath(self) -> list[str]:
        """``hadoop_classpath`` plus example applications (distributed shell) for tests."""
        return [*self.hadoop_classpath, f"{self.layout.apps}/*"]

    @property
    def jvm_flags(self) -> list[str]:
        if self.security is None:
            return list(JVM_FLAGS)
        # Java reads krb5.conf from here only, never from KRB5_CONFIG.
        return [*JVM_FLAGS, f"-Djava.security.krb5.conf={self.layout.krb5_conf}"]

    @property
    def hadoop_version(self) -> str:
        return maven.HADOOP_VERSION

    @property
    def java_home(self) -> Path:
        """The JDK the running cluster was started with, else the one `up` would use."""
        state = _state(self.dir)
        if "java_home" in state:
            return Path(state["java_home"])
        return preflight.find_java_home()

    @property
    def users(self) -> tuple[str, ...]:
        """Who has a principal and keytab on a secure cluster: alice, bob and the operator."""
        return (*USERS, self.user) if self.security is not None else ()

    def env(self, user: str | None = None) -> dict[str, str]:
        """The variables a client of this cluster needs; on a secure cluster ``KRB5_CONFIG``,
        and with ``user`` that user's fresh ticket (a kinit from its keytab) in its own ccache."""
        env = self._cluster_env()
        if self.security is not None:
            env["KRB5_CONFIG"] = str(self.layout.krb5_conf)
        if user is not None:
            self._check_principal(user, "env --user")
            env.update(kerberos.user_env(self.layout, user))
        return env

    def session(self, user: str | None = None) -> requests.Session:
        """HTTP to the cluster's REST APIs as ``user`` (default: whoever runs `up`): with
        SPNEGO on a secure cluster, else with ``user.name``."""
        user = user or self.user
        if self.security is not None:
            self._check_principal(user, "session")
            return kerberos.SpnegoSession(self.layout, user)
        session = requests.Session()
        session.params = {"user.name": user}
        return session

    def _check_principal(self, user: str, what: str) -> None:
        if self.security is None:
            raise DevClusterError(
                f"`{what} {user}` needs a secure devcluster: the one in {self.dir} runs without "
                "Kerberos, where clients name their user themselves (user.name). Restart it "
                "with `tony-jupyter devcluster down` and `up --secure`."
            )
        if user not in self.users:
            raise DevClusterError(
                f"No principal {user!r} on the devcluster in {self.dir}; choose one of: "
                f"{', '.join(self.users)}."
            )

    @property
    def http(self) -> requests.Session:
        """:meth:`session` of the operator, kept for the cluster's own probes."""
        if self._http is None:
            self._http = self.session()
        return self._http

    def _cluster_env(self) -> dict[str, str]:
        return {
            "HADOOP_CONF_DIR": str(self.conf_dir),
            "JAVA_HOME": str(self.java_home),
            "TONY_DEVCLUSTER_DIR": str(self.dir),
            "TONY_DEVCLUSTER_RM_URL": self.rm_url,
            "TONY_DEVCLUSTER_WEBHDFS_URL": self.webhdfs_url,
            "TONY_DEVCLUSTER_FS": self.fs_default_name,
            "TONY_DEVCLUSTER_CLASSPATH": os.pathsep.join(self.hadoop_classpath),
            "TONY_DEVCLUSTER_JVM_FLAGS": " ".join(self.jvm_flags),
            "TONY_DEVCLUSTER_HADOOP_VERSION": self.hadoop_version,
            # The interpreter that `up` put first on the containers' PATH.
            "TONY_DEVCLUSTER_PYTHON": _state(self.dir).get("python", sys.executable),
        }

    # -- state ------------------------------------------------------------------------------

    def is_running(self) -> bool:
        return all(
            process.live_process(self.layout.pid_file(name)) is not None
            for name in self.layout.service_names
        )

    def status(self) -> list[dict]:
        rows = []
        for name in self.layout.service_names:
            pid_file = self.layout.pid_file(name)
            entry = process.read_pid(pid_file)
            proc = process.live_process(pid_file)
            rows.append(
                {
                    "service": name,
                    "pid": entry[0] if entry else None,
                    "alive": proc is not None,
                    "ports": self.layout.ports(name),
                    "log": str(self.layout.log_file(name)),
                }
            )
        return rows

    def log_file(self, name: str) -> Path:
        if name not in self.layout.service_names:
            names = ", ".join(self.layout.service_names)
            raise DevClusterError(
                f"No service named {name!r} in the devcluster in {self.dir}; choose one of: "
                f"{names}."
            )
        return self.layout.log_file(name)

    # -- up / down --------------------------------------------------------------------------

    def up(self, timeout: float = 300.0) -> None:
        """Start every daemon (and on a secure cluster the KDC first) and return once the
        cluster is usable; a no-op if it runs.

        ``timeout`` covers start-up, not the first Maven download. On failure everything this
        call started is stopped again before the error propagates.
        """
        if self._refuse_other_running() and self.is_running():
            log.info("devcluster already running in %s", self.dir)
            return
        self._clear_pid_files()
        java_home = preflight.find_java_home()
        preflight.check_java(java_home)
        preflight.check_disk(self.dir)
        if self.security is not None:
            kerberos.check_tools()
            kerberos.check_hosts()
        preflight.check_ports(self.layout.all_ports())
        log.info("resolving Hadoop %s jars through Maven", self.hadoop_version)
        maven.resolve_jars("pom.xml", self.layout.lib, java_home)
        maven.resolve_jars("apps-pom.xml", self.layout.apps, java_home)
        state = {
            "java_home": str(java_home),
            "hadoop_version": self.hadoop_version,
            "port_offset": self.layout.port_offset,
            "python": sys.executable,
            "security": self.security.to_json() if self.security else None,
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        self.layout.state_file.write_text(json.dumps(state, indent=2) + "\n")
        if self.security is not None:
            kerberos.prepare(self.layout, list(self.users))
        write_config(self.layout, self.user, self._daemon_env(java_home)["PATH"], self.security)
        try:
            if self.security is not None:
                kerberos.start_kdc(self.layout, lambda: self._check_alive([KDC]))
            self._format_namenode(java_home)
            for name in SERVICE_NAMES:
                pid = process.start(
                    self._daemon_cmd(name, java_home),
                    self._daemon_env(java_home),
                    self.layout.log_file(name),
                    self.layout.pid_file(name),
                )
                log.info("started %s (pid %d)", name, pid)
            self._wait_usable(time.monotonic() + timeout)
            if self.security is not None:
                kerberos.make_hdfs_homes(self.webhdfs_url, self.http, self.users)
        except BaseException:
            self.down()
            raise
        log.info("devcluster is up in %s", self.dir)

    def down(self) -> None:
        """Stop exactly what the pid files name; remove the pid files, stale ones included.

        NodeManagers go first: a stopping NM unregisters from the RM, and with the RM already
        gone it retries the connection until it is killed. The KDC goes last, whether or not
        this object thinks the cluster is a secure one.
        """
        masters = [name for name in SERVICE_NAMES if name not in NODEMANAGERS]
        for group in (NODEMANAGERS, masters, [KDC]):
            pid_files = [self.layout.pid_file(name) for name in group]
            for pid_file in process.stop_all(pid_files):
                log.info("stopped %s", pid_file.stem)

    def _refuse_other_running(self) -> bool:
        """Whether Hadoop's daemons run in this dir; raises if they run with another port
        offset or security than this object asks for."""
        if not all(process.live_process(self.layout.pid_file(n)) for n in SERVICE_NAMES):
            return False
        state = _state(self.dir)
        running_offset = state.get("port_offset", 0)
        if running_offset != self.layout.port_offset:
            raise DevClusterError(
                f"The devcluster in {self.dir} is already running with port offset "
                f"{running_offset}, not {self.layout.port_offset}. Use it as it is, or run "
                "`tony-jupyter devcluster down` first to restart it with another offset."
            )
        wanted = self.security.to_json() if self.security else None
        if state.get("security") != wanted:
            running = _describe(state.get("security"))
            raise DevClusterError(
                f"The devcluster in {self.dir} is already running {running}, not "
                f"{_describe(wanted)}. Use it as it is, or run `tony-jupyter devcluster down` "
                "first to restart it the other way."
            )
        return True

    # -- node crash (fault-tolerance tests) --------------------------------------------------

    def kill_node(self, name: str) -> list[int]:
        """Crash NodeManager ``name`` as a lost host would: SIGKILL its JVM and every process
        in its containers (its process tree, taken before anything dies) at once, without a
        chance to stop them cleanly. Returns the pids killed."""
        pid_file = self._nm_pid_file(name)
        nm = process.live_process(pid_file)
        if nm is None:
            raise DevClusterError(f"{name} is not running in {self.dir}; nothing to kill.")
        family = [nm]
        try:
            family += nm.children(recursive=True)
        except psutil.Error:
            pass
        for proc in family:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(family, timeout=10)
        pid_file.unlink(missing_ok=True)
        log.info("killed %s and %d container processes", name, len(family) - 1)
        return [p.pid for p in family]

    def start_node(self, name: str, timeout: float = 180.0) -> None:
        """Start NodeManager ``name`` again (after :meth:`kill_node`) and return once the RM
        has taken its new registration: NM recovery is off, so the restarted NM reports no
        containers, and the RM ends those the old one ran (exit status ABORTED, node lost)."""
        pid_file = self._nm_pid_file(name)
        if process.live_process(pid_file) is not None:
            raise DevClusterError(f"{name} is already running in {self.dir}.")
        java_home = self.java_home
        started = time.time()
        pid = process.start(
            self._daemon_cmd(name, java_home),
            self._daemon_env(java_home),
            self.layout.log_file(name),
            pid_file,
        )
        log.info("started %s again (pid %d)", name, pid)
        rpc = self.layout.ports(name)["rpc"]
        deadline = time.monotonic() + timeout
        while True:
            if process.live_process(pid_file) is None:
                log_file = self.layout.log_file(name)
                raise DevClusterError(
                    f"{name} exited while starting again; its log is {log_file}; it ends "
                    f"with:\n{_tail(log_file)}"
                )
            nm_ports = {nm: self.layout.ports(nm)["rpc"] for nm in NODEMANAGERS}
            if not ready.yarn_pending(self.rm_url, nm_ports, self.http):
                # The old registration stays RUNNING until the new NM's first status update,
                # which carries a health report made after it started.
                nodes = ready.rm_nodes(self.rm_url, self.http)
                node = next(n for n in nodes if n["id"].endswith(f":{rpc}"))
                if int(node.get("lastHealthUpdate") or 0) / 1000 >= started - 1:
                    return
            if time.monotonic() > deadline:
                raise DevClusterError(
                    f"{name} did not register with the ResourceManager again within "
                    f"{timeout:g} s; see {self.layout.log_file(name)}."
                )
            time.sleep(0.25)

    def restart_node(self, name: str, timeout: float = 180.0) -> list[int]:
        """:meth:`kill_node` then :meth:`start_node`: a node that crashed and came back."""
        killed = self.kill_node(name)
        self.start_node(name, timeout)
        return killed

    def _nm_pid_file(self, name: str) -> Path:
        if name not in NODEMANAGERS:
            raise DevClusterError(
                f"No NodeManager named {name!r}; choose one of: {', '.join(NODEMANAGERS)}."
            )
        return self.layout.pid_file(name)

    def _clear_pid_files(self) -> None:
        """Drop pid files of dead daemons; refuse to start over a half-running cluster."""
        alive = []
        for name in (*SERVICE_NAMES, KDC):
            pid_file = self.layout.pid_file(name)
            if process.is_stale(pid_file):
                entry = process.read_pid(pid_file)
                pid = entry[0] if entry else "?"
                log.warning("removing stale pid file %s (pid %s is not running)", pid_file, pid)
                pid_file.unlink()
            elif pid_file.exists():
                alive.append(name)
        if alive:
            raise DevClusterError(
                f"The devcluster in {self.dir} is only partly running ({', '.join(alive)} alive, "
                "the rest stopped or crashed; see `tony-jupyter devcluster status` and `logs`). "
                "Run `tony-jupyter devcluster down` and then `up` again."
            )

    def _daemon_cmd(self, name: str, java_home: Path) -> list[str]:
        spec = service(name)
        return [
            str(java_home / "bin" / "java"),
            f"-Dproc_{name}",  # names the JVM in `ps`, like Hadoop's scripts do
            f"-Xmx{spec.heap_mb}m",
            *_DAEMON_JVM_OPTS,
            *self.jvm_flags,
            f"-Dhadoop.log.dir={self.layout.logs}",
            f"-Dyarn.log.dir={self.layout.logs}",
            f"-Dhadoop.home.dir={self.dir}",
            f"-Dhadoop.id.str={self.user}",
            "-cp",
            ":".join(self.layout.classpath(name)),
            spec.main_class,
        ]

    def _daemon_env(self, java_home: Path) -> dict[str, str]:
        """The NMs pass the whitelisted part of this to every container."""
        env = dict(os.environ)
        # A ticket cache from `eval $(devcluster env --user ...)` in this shell is not the
        # daemons' business: they log in from their keytabs.
        env.pop("KRB5CCNAME", None)
        env.update(self.env())
        env["JAVA_HOME"] = str(java_home)
        # Containers run `java` and `python` by name: make both the cluster's.
        python_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([str(java_home / "bin"), python_bin, env.get("PATH", "")])
        return env

    def _format_namenode(self, java_home: Path) -> None:
        if (self.layout.data / "nn" / "current").is_dir():
            return
        log.info("formatting the NameNode")
        cmd = self._daemon_cmd("namenode", java_home) + ["-format", "-nonInteractive", "-force"]
        log_file = self.layout.log_file("namenode-format")
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "wb") as out:
            proc = subprocess.run(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._daemon_env(java_home),
                timeout=180,
                check=False,
            )
        if proc.returncode != 0:
            raise DevClusterError(
                f"Formatting the NameNode failed (exit {proc.returncode}); see {log_file}:\n"
                + _tail(log_file)
            )

    def _wait_usable(self, deadline: float) -> None:
        pending: list[str] = ["everything"]
        labelled = False
        while time.monotonic() < deadline:
            self._check_alive()
            if not labelled:
                try:
                    ready.ensure_gpu_label(self.rm_url, None, self.http)
                    labelled = True
                except (requests.RequestException, ValueError):
                    pass
            nm_ports = {nm: self.layout.ports(nm)["rpc"] for nm in NODEMANAGERS}
            pending = (
                ready.yarn_pending(self.rm_url, nm_ports, self.http)
                if labelled
                else ["ResourceManager"]
            )
            pending += ready.hdfs_pending(self.webhdfs_url, None, self.http)
            if not pending:
                return
            time.sleep(0.25)
        raise DevClusterError(
            f"The devcluster did not become usable in time; still waiting for: "
            f"{'; '.join(pending)}. The daemons' logs are in {self.layout.logs} (and "
            "`tony-jupyter devcluster logs SERVICE`); everything started has been stopped. "
            "On a slow machine pass a longer --timeout."
        )

    def _check_alive(self, names: list[str] | None = None) -> None:
        for name in names or self.layout.service_names:
            if process.live_process(self.layout.pid_file(name)) is None:
                log_file = self.layout.log_file(name)
                raise DevClusterError(
                    f"The {name} exited during start-up; everything started has been stopped. "
                    f"Its log is {log_file}; it ends with:\n{_tail(log_file)}"
                )


def _describe(security: dict | None) -> str:
    if not security:
        return "without Kerberos"
    return "with Kerberos (" + ", ".join(f"{k}={v}" for k, v in security.items()) + ")"


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
