"""The devcluster's directory layout, fixed ports, and the Hadoop configuration it writes.

One shared conf dir (``DIR/conf``, the ``HADOOP_CONF_DIR`` clients use) plus a conf dir per NM
holding only its ``yarn-site.xml`` and ``core-site.xml``: the NM's classpath puts its own dir
first, and Hadoop's ``Configuration`` loads the first of each that the class loader finds. (The
NMs' core-site is the shared one and their local filesystem, nodefs.py's, where compiled.)"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import escape

from . import ha, nodefs, queues, tls
from . import security as sec
from .hosts import SERVICE_HOSTS
from .queues import GPU_LABEL
from .tls import TlsFiles

HOST = "127.0.0.1"
GPU_RESOURCE = "yarn.io/gpu"
# The default partition (nm1) fits an AM and 4 one-vcore workers with room (more for a bench).
NM_MEMORY_MB = int(os.environ.get("TONY_DEVCLUSTER_NM_MEMORY_MB") or 6144)
NM_VCORES = int(os.environ.get("TONY_DEVCLUSTER_NM_VCORES") or 8)
# nm2 (the gpu partition) fits the mission's `--workers 8 --gpus 1` beside its AM; on
# `up --hosts` nm3 (worker3) is its twin in the same partition.
NM2_GPUS, NM2_VCORES = 8, 12
GPU_NODEMANAGERS = ("nm2", "nm3")


def nm_resources(nm: str, gpus: bool = True) -> tuple[int, int, int]:
    """What a NodeManager declares: memory (MB), vcores, counted GPUs (none at all on a cluster
    started with ``gpus`` False, `up --no-gpus`)."""
    if nm in GPU_NODEMANAGERS:
        return NM_MEMORY_MB, NM2_VCORES, NM2_GPUS if gpus else 0
    return NM_MEMORY_MB, NM_VCORES, 0


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    main_class: str
    heap_mb: int
    ports: dict[str, int]


_RM_CLASS = ha.RM_CLASS
_NM_CLASS = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"

# Fixed ports, so that the addresses printed by `up` stay valid across restarts. HDFS and RM use
# Hadoop's defaults; the two NMs get 804x and 814x so that they cannot collide. A cluster's
# port offset (default 0) shifts them all, so that several clusters can share a machine.
SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("namenode", ha.NN_CLASS, 384, {"rpc": 8020, "http": 9870}),
    ServiceSpec(
        "datanode",
        "org.apache.hadoop.hdfs.server.datanode.DataNode",
        256,
        {"data": 9866, "http": 9864, "ipc": 9867},
    ),
    ServiceSpec(
        "resourcemanager",
        _RM_CLASS,
        512,
        {"client": 8032, "scheduler": 8030, "tracker": 8031, "admin": 8033, "http": 8088},
    ),
    ServiceSpec("nm1", _NM_CLASS, 384, {"rpc": 8041, "localizer": 8040, "http": 8042}),
    ServiceSpec("nm2", _NM_CLASS, 384, {"rpc": 8141, "localizer": 8140, "http": 8142}),
)
SERVICE_NAMES = tuple(s.name for s in SERVICES)
# `up --hosts` only: worker2's own DataNode, at the same ports as worker1's on its own address.
DATANODE2 = ServiceSpec("datanode2", SERVICES[1].main_class, 256, SERVICES[1].ports)
# `up --hosts` only: worker3, a second node of the gpu partition, so that a job there goes on
# while one of its hosts is cut off: its NodeManager (ports of its own, 824x, as the RM tells
# NodeIds apart by them in the readiness check) and its DataNode (as worker2's).
NM3 = ServiceSpec("nm3", _NM_CLASS, 384, {"rpc": 8241, "localizer": 8240, "http": 8242})
DATANODE3 = ServiceSpec("datanode3", SERVICES[1].main_class, 256, SERVICES[1].ports)
HOSTS_ONLY = (DATANODE2, NM3, DATANODE3)
HOSTS_ONLY_NAMES = tuple(s.name for s in HOSTS_ONLY)
NODEMANAGERS = ("nm1", "nm2")
ALL_NODEMANAGERS = (*NODEMANAGERS, NM3.name)
# On `up --hosts`, HDFS keeps two copies of every block on three DataNodes: a host cut off
# leaves a copy of everything (the job's environment, its checkpoints) on the others.
HOSTS_REPLICATION = 2
# `up --ha` only: the second NameNode and ResourceManager, and ZooKeeper (``ha.py``).
HA_SERVICES = tuple(ServiceSpec(name, *spec) for name, spec in ha.SERVICES.items())
# A secure cluster's MIT KDC, beside the daemons: no JVM, started and stopped with them.
KDC = "kdc"
_KDC_PORTS = {"kdc": 9088}


def service(name: str) -> ServiceSpec:
    for spec in (*SERVICES, *HOSTS_ONLY, *HA_SERVICES):
        if spec.name == name:
            return spec
    raise KeyError(name)


MAX_PORT_OFFSET = 65535 - max(
    [p for s in SERVICES for p in s.ports.values()]
    + list(_KDC_PORTS.values())
    + list(tls.HTTPS_PORTS.values())
)


@dataclass(frozen=True)
class Layout:
    """Where everything lives under the cluster's root dir, and which ports it binds.

    ``secure``: Kerberos on (`up --secure`); adds the KDC, and every address names ``localhost``
    rather than 127.0.0.1, because service principals carry the host name (``security.py``).
    ``hosts``: `up --hosts`; each daemon binds its own host's name (``hosts.py``).
    ``tls``: `up --tls`; every web endpoint HTTPS only, on its "https" port (``tls.py``).
    ``ha``: `up --ha`; two NameNodes, two ResourceManagers and ZooKeeper (``ha.py``).
    ``gpus``: the RM knows yarn.io/gpu and nm2 (nm3) declares some; False (`up --no-gpus`):
    a cluster without the resource type, as most are (nm2 keeps its ``gpu`` partition).
    """

    root: Path
    port_offset: int = 0
    secure: bool = False
    hosts: bool = False
    tls: bool = False
    ha: bool = False
    gpus: bool = True

    @property
    def host(self) -> str:
        return sec.KERBEROS_HOST if self.secure else HOST

    def host_of(self, name: str) -> str:
        return SERVICE_HOSTS[name] if self.hosts else self.host

    @property
    def service_names(self) -> tuple[str, ...]:
        """Every process `up` starts, in start order."""
        names = (*SERVICE_NAMES, *HOSTS_ONLY_NAMES) if self.hosts else SERVICE_NAMES
        names = ha.service_names(names) if self.ha else names
        return (KDC, *names) if self.secure else names

    @property
    def nodemanagers(self) -> tuple[str, ...]:
        """The NodeManagers this cluster runs (nm3 on `up --hosts` only)."""
        return ALL_NODEMANAGERS if self.hosts else NODEMANAGERS

    def ports(self, name: str) -> dict[str, int]:
        base = _KDC_PORTS if name == KDC else service(name).ports
        if self.tls and name in tls.HTTPS_PORTS:
            base = {**base, "https": tls.HTTPS_PORTS[name]}
        return {what: port + self.port_offset for what, port in base.items()}

    def all_ports(self) -> dict[int, str]:
        """port -> "service purpose", for every port the daemons bind."""
        return {
            port: f"{name} {what}"
            for name in self.service_names
            for what, port in self.ports(name).items()
        }

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def client_lib(self) -> Path:
        return self.root / "client-lib"

    @property
    def apps(self) -> Path:
        return self.root / "apps"

    @property
    def conf(self) -> Path:
        return self.root / "conf"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def tls_files(self) -> TlsFiles:
        return TlsFiles(self.root)

    @property
    def state_file(self) -> Path:
        return self.root / "cluster.json"

    def nm_conf(self, nm: str) -> Path:
        return self.root / f"conf-{nm}"

    def nm_log_dir(self, nm: str) -> Path:
        """Where ``nm`` keeps container logs: ``<appId>/<containerId>/{stdout,stderr,...}``."""
        return self.data / nm / "log"

    def log_file(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def pid_file(self, name: str) -> Path:
        return self.run / f"{name}.pid"

    # -- Kerberos (secure clusters) --

    @property
    def kdc_dir(self) -> Path:
        """The KDC's kdc.conf, principal database and stash file."""
        return self.root / "kdc"

    @property
    def krb5_conf(self) -> Path:
        """Client-side krb5.conf (``KRB5_CONFIG``, and ``java.security.krb5.conf``)."""
        return self.root / "krb5.conf"

    @property
    def keytabs(self) -> Path:
        return self.root / "keytabs"

    def keytab(self, name: str) -> Path:
        """Keytab of service kind ``name`` ("nn", "HTTP", ...) or of a user ("alice", ...)."""
        return self.keytabs / f"{name}.keytab"

    def ccache(self, user: str) -> Path:
        """The ticket cache that `env --user USER` fills (``KRB5CCNAME``)."""
        return self.root / "tickets" / user

    @property
    def http_secret(self) -> Path:
        """Signs the hadoop.auth cookie that the daemons' SPNEGO filters hand out."""
        return self.keytabs / "http-signature-secret"

    def classpath(self, name: str | None = None) -> list[str]:
        """Classpath of daemon ``name`` (its own conf dir first), or the clients' (the AM's)."""
        client = name is None and self.client_lib.is_symlink()  # another release (maven.py)
        entries = [str(self.conf), f"{self.client_lib if client else self.lib}/*"]
        if name in ALL_NODEMANAGERS:
            entries.insert(0, str(self.nm_conf(name)))
            if nodefs.compiled(self.root):
                entries.append(str(nodefs.classes(self.root)))
        return entries


def _xml(props: dict[str, object]) -> str:
    rows = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(str(v))}</value></property>\n"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def _core_site(layout: Layout, user: str) -> dict[str, object]:
    port = layout.ports("namenode")["rpc"]
    return {
        "fs.defaultFS": f"hdfs://{layout.host_of('namenode')}:{port}",
        "hadoop.tmp.dir": layout.data / "tmp",
        # Unauthenticated web UIs and WebHDFS act as this user.
        "hadoop.http.staticuser.user": user,
        # Lets later work submit on behalf of other users (doAs) without Kerberos.
        f"hadoop.proxyuser.{user}.hosts": "*",
        f"hadoop.proxyuser.{user}.groups": "*",
        # Daemons start together; retry the first connects quickly rather than back off.
        "ipc.client.connect.retry.interval": 250,
    }


def _hdfs_site(layout: Layout) -> dict[str, object]:
    nn, dn = layout.ports("namenode"), layout.ports("datanode")
    nn_host, dn_host = layout.host_of("namenode"), layout.host_of("datanode")
    props: dict[str, object] = {
        "dfs.replication": 1,
        "dfs.permissions.enabled": "true",  # real checks: the staging permission test needs them
        "dfs.namenode.name.dir": f"file://{layout.data / 'nn'}",
        "dfs.datanode.data.dir": f"file://{layout.data / 'dn'}",
        "dfs.namenode.rpc-address": f"{nn_host}:{nn['rpc']}",
        "dfs.namenode.http-address": f"{nn_host}:{nn['http']}",
        "dfs.namenode.secondary.http-address": f"{nn_host}:0",
        "dfs.datanode.address": f"{dn_host}:{dn['data']}",
        "dfs.datanode.http.address": f"{dn_host}:{dn['http']}",
        "dfs.datanode.ipc.address": f"{dn_host}:{dn['ipc']}",
        # WebHDFS redirects name the DataNode by this, so they stay on loopback.
        "dfs.datanode.hostname": dn_host,
        # Default 30 s: a restarted NN would sit in safe mode long after its one DN reported.
        "dfs.namenode.safemode.extension": 0,
    }
    if layout.hosts:
        props["dfs.replication"] = HOSTS_REPLICATION
        # A DataNode silent for 10 s (a host cut off) is read from and written to last, not
        # after the 10.5 minutes that make it dead (Hadoop's defaults: never, 30 s).
        props["dfs.namenode.avoid.read.stale.datanode"] = "true"
        props["dfs.namenode.avoid.write.stale.datanode"] = "true"
        props["dfs.namenode.stale.datanode.interval"] = 10_000
    return props


def _yarn_site_shared(layout: Layout, container_path: str) -> dict[str, object]:
    rm, host = layout.ports("resourcemanager"), layout.host_of("resourcemanager")
    props: dict[str, object] = {
        "yarn.resourcemanager.hostname": host,
        "yarn.resourcemanager.address": f"{host}:{rm['client']}",
        "yarn.resourcemanager.scheduler.address": f"{host}:{rm['scheduler']}",
        "yarn.resourcemanager.resource-tracker.address": f"{host}:{rm['tracker']}",
        "yarn.resourcemanager.admin.address": f"{host}:{rm['admin']}",
        "yarn.resourcemanager.webapp.address": f"{host}:{rm['http']}",
        # Default 1000 ms; every allocation waits for an NM heartbeat, so this is the latency floor.
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": 100,
        # Default 30 s between NM->RM connect retries, which stalls an NM started before the RM.
        "yarn.resourcemanager.connect.retry-interval.ms": 500,
        # Later work restarts the AM; an app asks for at most this many attempts.
        "yarn.resourcemanager.am.max-attempts": 3,
        "yarn.node-labels.enabled": "true",
        "yarn.node-labels.fs-store.root-dir": f"file://{layout.data / 'node-labels'}",
        # Each NM declares its own partition in its yarn-site (nm2: gpu).
        "yarn.node-labels.configuration-type": "distributed",
        "yarn.scheduler.minimum-allocation-mb": 128,
        "yarn.scheduler.maximum-allocation-mb": NM_MEMORY_MB,
        "yarn.scheduler.maximum-allocation-vcores": NM_VCORES,
        # JVM and TensorFlow processes reserve far more virtual memory than they use.
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.pmem-check-enabled": "false",
        # At the default 90 % a full disk turns the NM UNHEALTHY silently; `up` checks instead.
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": 100.0,
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": 0,
        # Keep finished containers' dirs and logs for an hour for post-mortems.
        "yarn.nodemanager.delete.debug-delay-sec": 3600,
        "yarn.log-aggregation-enable": "false",
        "yarn.application.classpath": ",".join(layout.classpath()),
        # PATH is forced here, not whitelisted: containers start from an empty environment, and
        # bash fills in its own default PATH, which beats the whitelisted ${PATH:-...} fallback.
        # This puts the cluster's `java` and `python` first in every container.
        "yarn.nodemanager.admin-env": f"MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,PATH={container_path}",
        # Containers get these from the NM's environment unless they set them themselves.
        "yarn.nodemanager.env-whitelist": ",".join(
            [
                "JAVA_HOME",
                "HADOOP_CONF_DIR",
                "HADOOP_COMMON_HOME",
                "HADOOP_HDFS_HOME",
                "HADOOP_YARN_HOME",
                "HADOOP_HOME",
                "CLASSPATH_PREPEND_DISTCACHE",
                "LANG",
                "TZ",
                "TONY_DEVCLUSTER_CLASSPATH",
                "TONY_DEVCLUSTER_JVM_FLAGS",
                "TONY_DEVCLUSTER_PYTHON",
                # a secure cluster's krb5.conf, for Kerberos clients in containers
                "KRB5_CONFIG",
                "TONY_CA_BUNDLE",  # a TLS cluster's CA, for the tasks' WebHDFS clients
            ]
        ),
    }
    if layout.gpus:
        props["yarn.resource-types"] = GPU_RESOURCE
        # Asking for more GPUs than any node has fails at once instead of pending forever.
        props[f"yarn.resource-types.{GPU_RESOURCE}.maximum-allocation"] = NM2_GPUS
    return props


def _yarn_site_nm(layout: Layout, nm: str) -> dict[str, object]:
    ports, host = layout.ports(nm), layout.host_of(nm)
    props: dict[str, object] = {
        # NodeId becomes 127.0.0.1:<rpc>, distinct per NM, instead of <hostname>:<ephemeral>.
        "yarn.nodemanager.hostname": host,
        "yarn.nodemanager.address": f"{host}:{ports['rpc']}",
        "yarn.nodemanager.localizer.address": f"{host}:{ports['localizer']}",
        "yarn.nodemanager.webapp.address": f"{host}:{ports['http']}",
        "yarn.nodemanager.local-dirs": layout.data / nm / "local",
        "yarn.nodemanager.log-dirs": layout.nm_log_dir(nm),
        "yarn.nodemanager.resource.memory-mb": nm_resources(nm)[0],
        "yarn.nodemanager.resource.cpu-vcores": nm_resources(nm)[1],
    }
    if layout.secure:
        props["yarn.nodemanager.principal"] = sec.nm_principal(layout.hosts, host)
    if nm in GPU_NODEMANAGERS:
        if layout.gpus:
            # Counted only: no yarn.nodemanager.resource-plugins, which would run nvidia-smi.
            props[f"yarn.nodemanager.resource-type.{GPU_RESOURCE}"] = NM2_GPUS
        props["yarn.nodemanager.node-labels.provider"] = "config"
        props["yarn.nodemanager.node-labels.provider.configured-node-partition"] = GPU_LABEL
        # The RM rejects the label until `up` has added it to the cluster; resend it promptly
        # instead of after the default 2 minutes.
        props["yarn.nodemanager.node-labels.resync-interval-ms"] = 1000
    return props


def write_config(
    layout: Layout, user: str, container_path: str, security: sec.Security | None = None
) -> None:
    """(Re)write every config file; cheap, and keeps an existing DIR in step with this code.

    ``security`` (with ``layout.secure``) adds Hadoop's secure mode on top of the same files.
    """
    layout.conf.mkdir(parents=True, exist_ok=True)
    core, hdfs = _core_site(layout, user), _hdfs_site(layout)
    yarn, capacity = _yarn_site_shared(layout, container_path), queues.capacity_scheduler()
    policy_file = layout.conf / "hadoop-policy.xml"
    policy_file.unlink(missing_ok=True)
    if security is not None:
        core.update(sec.core_site(layout, user))
        hdfs.update(sec.hdfs_site(layout, user, security))
        yarn.update(sec.yarn_site(layout, user, security))
        capacity.update(sec.queue_acls(user))
    if layout.ha:
        ha.apply(layout.host_of, layout.ports, layout.data, core, hdfs, yarn)
    if layout.tls:  # after security's: its dfs.http.policy is HTTP_ONLY
        hdfs.update(tls.hdfs_site(layout.host_of, layout.ports))
        yarn.update(tls.yarn_site(layout.host_of, layout.ports))
        if layout.ha:  # each master's HTTPS address by its id, as the HTTP ones are
            ha.apply_https(layout.host_of, layout.ports, hdfs, yarn)
    files = {
        "core-site.xml": _xml(core),
        "hdfs-site.xml": _xml(hdfs),
        "yarn-site.xml": _xml(yarn),
        "capacity-scheduler.xml": _xml(capacity),
        "log4j.properties": resources.files(__package__).joinpath("log4j.properties").read_text(),
    }
    if security is not None:
        files["hadoop-policy.xml"] = _xml(sec.policy(user))
    if layout.tls:
        files["ssl-server.xml"] = _xml(tls.ssl_server(layout.tls_files))
        files["ssl-client.xml"] = _xml(tls.ssl_client(layout.tls_files))
    if layout.ha:
        files["zoo.cfg"] = ha.zoo_cfg(layout.host_of, layout.ports, layout.data)
    for name, text in files.items():
        (layout.conf / name).write_text(text, encoding="utf-8")
    for nm in layout.nodemanagers:
        nm_dir = layout.nm_conf(nm)
        nm_dir.mkdir(parents=True, exist_ok=True)
        props = {**yarn, **_yarn_site_nm(layout, nm)}
        if layout.tls:
            props.update(tls.yarn_site_nm(layout.host_of(nm), layout.ports(nm)))
        (nm_dir / "yarn-site.xml").write_text(_xml(props), encoding="utf-8")
        nm_core = {**core, nodefs.KEY: nodefs.CLASS} if nodefs.compiled(layout.root) else core
        (nm_dir / "core-site.xml").write_text(_xml(nm_core), encoding="utf-8")
