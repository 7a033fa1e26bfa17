"""`DevCluster`: a pseudo-distributed HDFS + YARN made of separate JVMs on 127.0.0.1."""

from __future__ import annotations

import getpass
import json
import logging
import os
import sys
from pathlib import Path

import requests

from tony_jupyter.core.jpms import JPMS_FLAGS

from . import (
    daemons,
    failover,
    hostrun,
    kerberos,
    maven,
    netns,
    nodefs,
    nodes,
    preflight,
    process,
    tls,
)
from .config import (
    ALL_NODEMANAGERS,
    HA_SERVICES,
    HOSTS_ONLY_NAMES,
    KDC,
    MAX_PORT_OFFSET,
    SERVICE_NAMES,
    Layout,
    write_config,
)
from .errors import DevClusterError
from .ha import NAMESERVICE, ZOOKEEPER
from .hosts import EDGE, SERVICE_HOSTS, Hosts, Topology
from .ready import wait_usable as wait_ready
from .security import USERS, Security

log = logging.getLogger(__name__)

# Any JVM of Hadoop code (daemons, containers, the JPype AM): one list, beside the AM's use.
JVM_FLAGS = JPMS_FLAGS


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
        hosts: bool | None = None,
        tls_on: bool | None = None,
        hadoop_version: str | None = None,
        ha: bool | None = None,
        gpus: bool | None = None,
    ) -> None:
        """``port_offset`` shifts every port (e.g. 10000: RM on 18088) so that clusters can run
        side by side; by default the offset the cluster in ``dir`` was started with, else
        ``$TONY_JUPYTER_DEVCLUSTER_PORT_OFFSET``, else 0. ``security``: True or a
        :class:`Security` for Kerberos (`up --secure`), False for none; by default what the
        cluster in ``dir`` was started with, else none. ``hosts`` (`up --hosts`, ``hosts.py``),
        ``tls_on`` (HTTPS only from its own CA, `up --tls`, ``tls.py``), ``ha`` (two NameNodes,
        two RMs, `up --ha`, ``ha.py``): likewise. ``gpus`` False (`up --no-gpus`): no node
        offers yarn.io/gpu; by default as the cluster in ``dir`` was started, else with GPUs."""
        root = Path(dir or default_dir()).expanduser().resolve()
        self._version = maven.check_version(hadoop_version) if hadoop_version else None
        recorded_hosts = _state(root).get("hosts")
        hosts = bool(recorded_hosts) if hosts is None else hosts
        tls_on = bool(_state(root).get("tls")) if tls_on is None else tls_on
        ha = bool(_state(root).get("ha")) if ha is None else ha
        gpus = bool(_state(root).get("gpus", True)) if gpus is None else gpus
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
        secure = self.security is not None
        preflight.check_shape(hosts=hosts, secure=secure, ha=ha)
        self.layout = Layout(
            root, port_offset, secure=secure, hosts=hosts, tls=tls_on, ha=ha, gpus=gpus
        )
        self.hosts = Hosts.from_json(recorded_hosts) if hosts and recorded_hosts else None
        self.user = getpass.getuser()
        self._http: requests.Session | None = None

    # -- addresses and classpath ----------------------------------------------------------

    @property
    def dir(self) -> Path:
        return self.layout.root

    @property
    def conf_dir(self) -> Path:
        return self.layout.conf

    def _web_url(self, name: str) -> str:
        if self.layout.ha and self.reaches_masters:  # the pair's active one, asked each time
            return failover.active_url(self.layout, self.http, str(failover.kind_of(name)))
        # (of an HA pair that cannot be asked from here: the first, as when neither answers)
        scheme = "https" if self.layout.tls else "http"
        return f"{scheme}://{self.layout.host_of(name)}:{self.layout.ports(name)[scheme]}"

    @property
    def reaches_masters(self) -> bool:
        """Whether this process can ask the masters anything: on `--hosts` only from a host
        (the machine's own namespace has no way to them, and must send nothing towards their
        addresses); on one host always."""
        return self.hosts is None or hostrun.on_host() is not None

    @property
    def rm_url(self) -> str:
        return self._web_url("resourcemanager")

    @property
    def webhdfs_url(self) -> str:
        return self._web_url("namenode")

    @property
    def ca_bundle(self) -> Path | None:
        """A TLS cluster's CA certificate as PEM, what its clients verify against."""
        return self.layout.tls_files.ca_pem if self.layout.tls else None

    @property
    def fs_default_name(self) -> str:
        nn = f"{self.layout.host_of('namenode')}:{self.layout.ports('namenode')['rpc']}"
        return f"hdfs://{NAMESERVICE if self.layout.ha else nn}"

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
        """The running cluster's Hadoop release, else the one `up` would start."""
        return str(_state(self.dir).get("hadoop_version") or maven.version_to_start(self._version))

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
        if self.ca_bundle is not None:
            env[tls.CA_ENV] = str(self.ca_bundle)
        if user is not None:
            self._check_principal(user, "env --user")
            env.update(kerberos.user_env(self.layout, user, self._kdc_via))
        return env

    def session(self, user: str | None = None) -> requests.Session:
        """HTTP to the cluster's REST APIs as ``user`` (default: whoever runs `up`): with
        SPNEGO on a secure cluster, else with ``user.name``."""
        user = user or self.user
        if self.security is not None:
            self._check_principal(user, "session")
            session: requests.Session = kerberos.SpnegoSession(self.layout, user)
        else:
            session = requests.Session()
            session.params = {"user.name": user}
        if self.ca_bundle is not None:  # no REQUESTS_CA_BUNDLE of the shell's in the way
            session.verify, session.trust_env = str(self.ca_bundle), False
        return session

    def _check_principal(self, user: str, what: str) -> None:
        kerberos.check_principal(self.dir, self.security is not None, self.users, user, what)

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
            "TONY_DEVCLUSTER_PYTHON": str(self.hosts.python)
            if self.hosts
            else _state(self.dir).get("python", sys.executable),
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
                    "host": self.layout.host_of(name),
                    "pid": entry[0] if entry else None,
                    "alive": proc is not None,
                    "ports": self.layout.ports(name),
                    "ha_state": failover.ha_state(self.layout, self.http, name)
                    if self.layout.ha and proc is not None and self.reaches_masters
                    else None,
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
        if self.layout.hosts:
            netns.require_root("`devcluster up --hosts`")
        if self._refuse_other_running() and self.is_running():
            log.info("devcluster already running in %s", self.dir)
            return
        daemons.clear_pid_files(self)
        java_home = preflight.find_java_home()
        preflight.check_java(java_home)
        preflight.check_disk(self.dir)
        if self.security is not None:
            kerberos.check_tools()
            if not self.layout.hosts:  # there each host's /etc/hosts is the cluster's own
                kerberos.check_hosts()
        if not self.layout.hosts:  # on hosts every port is the namespaces' own
            preflight.check_ports(self.layout.all_ports())
        formatted = self.dir if daemons.hdfs_formatted(self.layout) else None
        version = maven.version_to_start(self._version, _state(self.dir), formatted)
        maven.resolve_cluster_jars(self.layout, java_home, version)
        state = {
            "java_home": str(java_home),
            "hadoop_version": version,
            "port_offset": self.layout.port_offset,
            "python": sys.executable,
            "security": self.security.to_json() if self.security else None,
            "tls": self.layout.tls,
            "ha": self.layout.ha,
            "gpus": self.layout.gpus,
        }
        if self.layout.hosts:
            keep = [self.dir, self.layout.lib, self.layout.apps]
            self.hosts = Hosts.plan(self.dir, keep, ha=self.layout.ha)
            state["hosts"] = self.hosts.to_json()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.layout.state_file.write_text(json.dumps(state, indent=2) + "\n")
        if self.security is not None:
            kerberos.prepare(self.layout, list(self.users))
        if self.layout.tls:
            tls.prepare(self.layout.tls_files, java_home)
        nodefs.build(self.layout.root, self.layout.lib, java_home)
        write_config(
            self.layout, self.user, daemons.daemon_env(self, java_home)["PATH"], self.security
        )
        try:
            if self.hosts is not None:
                netns.create(self.hosts.topology, len(self.hosts.keep))
            if self.security is not None:
                kerberos.start_kdc(
                    self.layout,
                    lambda: self._check_alive([KDC]),
                    self._on_kdc_host,
                    self._kdc_via,
                )
            daemons.format_namenode(self, java_home)
            for name in self.layout.service_names:
                if name == KDC:
                    continue
                pid = process.start(
                    daemons.daemon_cmd(self, name, java_home),
                    daemons.daemon_env(self, java_home),
                    self.layout.log_file(name),
                    self.layout.pid_file(name),
                )
                log.info("started %s (pid %d)", name, pid)
            if self.hosts is not None and hostrun.on_host() is None:
                hostrun.wait_on_edge(self, timeout)
            else:
                self.wait_usable(timeout)
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
        others = (*SERVICE_NAMES, *HOSTS_ONLY_NAMES, *(s.name for s in HA_SERVICES))
        masters = [name for name in others if name not in (*ALL_NODEMANAGERS, ZOOKEEPER)]
        for group in (ALL_NODEMANAGERS, masters, [ZOOKEEPER, KDC]):
            pid_files = [self.layout.pid_file(name) for name in group]
            for pid_file in process.stop_all(pid_files):
                log.info("stopped %s", pid_file.stem)
        # The hosts of `up --hosts` (and of one that crashed), whatever this object was told.
        if netns.destroy(Topology.for_dir(self.dir)):
            log.info("removed the hosts' namespaces, links and mounts")

    def _refuse_other_running(self) -> bool:
        """Whether Hadoop's daemons run in this dir; raises if they run with another port
        offset or security than this object asks for."""
        if not all(process.live_process(self.layout.pid_file(n)) for n in SERVICE_NAMES):
            return False
        wanted = {
            "port_offset": self.layout.port_offset,
            "hosts": self.layout.hosts,
            "security": self.security.to_json() if self.security else None,
            "hadoop_version": self._version,  # None: whichever it runs
            "tls": self.layout.tls,
            "ha": self.layout.ha,
            "gpus": self.layout.gpus,
        }
        preflight.check_same_cluster(self.dir, _state(self.dir), wanted)
        return True

    # -- node crash (fault-tolerance tests): see nodes.py ------------------------------------

    def kill_node(self, name: str) -> list[int]:
        return nodes.kill_node(self, name)

    def start_node(self, name: str, timeout: float = 180.0) -> None:
        nodes.start_node(self, name, timeout)

    def restart_node(self, name: str, timeout: float = 180.0) -> list[int]:
        return nodes.restart_node(self, name, timeout)

    def wait_usable(self, timeout: float) -> None:
        """Until every daemon serves (from a host that reaches them: on `--hosts`, the edge);
        on an HA cluster after making nn1 active and an RM elected; on a secure one, then
        HDFS's /tmp and the users' homes made (again: it changes nothing made before)."""
        if self.layout.ha:
            failover.activate(self, self._check_alive, timeout)
        nm_ports = {nm: self.layout.ports(nm)["rpc"] for nm in self.layout.nodemanagers}
        urls = (self.rm_url, self.webhdfs_url)
        datanodes = sum(1 for name in self.layout.service_names if name.startswith("datanode"))
        wait_ready(
            *urls,
            nm_ports,
            self.http,
            self._check_alive,
            timeout,
            self.layout.logs,
            datanodes,
            self.layout.gpus,
        )
        if self.security is not None:
            kerberos.make_hdfs_homes(self.webhdfs_url, self.http, self.users)

    def _on_kdc_host(self, argv: list[str]) -> list[str]:
        """``argv`` as the KDC's host runs it (on `--hosts`: master)."""
        return self.hosts.command(SERVICE_HOSTS[KDC], argv) if self.hosts else argv

    @property
    def _kdc_via(self) -> tuple[str, ...]:
        """How this process reaches the KDC (``kerberos.py``): on `--hosts`, from the machine's
        own namespace, through the edge's network namespace; else as it is."""
        if self.hosts is None or hostrun.on_host() is not None:
            return ()
        return ("ip", "netns", "exec", self.hosts.host(EDGE).netns)

    def _check_alive(self, names: list[str] | None = None) -> None:
        for name in names or self.layout.service_names:
            if process.live_process(self.layout.pid_file(name)) is None:
                log_file = self.layout.log_file(name)
                raise DevClusterError(
                    f"The {name} exited during start-up; everything started has been stopped. "
                    f"Its log is {log_file}; it ends with:\n{process.tail(log_file)}"
                )
