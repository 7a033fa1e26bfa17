"""`devcluster up --ha`: two NameNodes of one nameservice and two ResourceManagers, with the
ZooKeeper the RMs elect their leader in and keep their state in; the daemons' extra arguments and
the site settings. Making one master active and failing over: ``failover.py``.

Choices, for a 2-core machine where every JVM costs start-up CPU and memory:

- **Shared edits in a directory** (``dfs.namenode.shared.edits.dir=file://DIR/data/nn-shared``,
  Hadoop's HDFSHighAvailabilityWithNFS), not a quorum of three JournalNodes: both NameNodes run
  on this host, so a directory is as shared as NFS would make it, at no extra JVM (JournalNodes
  would be three). On `--hosts` (nn1 on ``master``, nn2 on ``master2``: ``hosts.py``) both
  master hosts see the cluster dir, bound back past their tmpfs mounts: the same directory.
- **nn2 from a copy of the formatted name dir**, not ``-bootstrapStandby``, which needs nn1
  running and one more JVM; Hadoop's HA guide gives the copy as the other way.
- **Manual NameNode failover** (``haadmin -transitionToActive``), no ZKFC: automatic failover
  would add a ZKFC JVM per NameNode. `up` makes nn1 active, and `devcluster failover nn` plays
  the ZKFC's part after killing the active one (SIGKILL is the fence). Both start as standby.
- **Automatic RM failover** through the RMs' embedded elector, which needs no JVM of its own; its
  ZooKeeper (``ZooKeeperServerMain``, the jar already on Hadoop's classpath) also holds the RMs'
  state (``ZKRMStateStore``), with work-preserving recovery: a new active RM takes the running
  AMs and containers over.

Both masters of a pair share this host (on `--hosts` they do not, and the same holds), so
each finds its own id from its command line
(``dfs.ha.namenode.id``, ``yarn.resourcemanager.ha.id``), not from matching its address.

With ``--secure`` both masters of a pair share one principal and keytab (``nn/localhost``,
``rm/localhost``: they share the host) and their SPNEGO; ``failover.py``'s haadmin logs in from
the NameNodes' keytab. ZooKeeper stays plain, without SASL: on a devcluster only the RMs reach
it, over loopback, and the RM state store's root node is still fenced by ZKRMStateStore's own
ACL; SASL would need a ``zookeeper/localhost`` principal and JAAS files for the server and
both RMs (``hadoop.zk.kerberos.principal``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

NAMESERVICE = "devcluster"
CLUSTER_ID = "devcluster"
NN_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
RM_CLASS = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
ZK_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
ZOOKEEPER = "zookeeper"
# Each pair's services in id order: nn1 is the plain cluster's namenode, rm1 its RM.
NAMENODES = {"nn1": "namenode", "nn2": "namenode2"}
RESOURCEMANAGERS = {"rm1": "resourcemanager", "rm2": "resourcemanager2"}
# The daemons only an HA cluster has: main class, heap (MB), ports. ZooKeeper first: the RMs
# connect to it as they start.
SERVICES: dict[str, tuple[str, int, dict[str, int]]] = {
    ZOOKEEPER: (ZK_CLASS, 64, {"client": 2181}),
    "namenode2": (NN_CLASS, 384, {"rpc": 8120, "http": 9860}),
    "resourcemanager2": (
        RM_CLASS,
        512,
        {"client": 8132, "scheduler": 8130, "tracker": 8131, "admin": 8133, "http": 8188},
    ),
}
# The ZooKeeper session of the active RM's elector: the standby takes over this long after the
# active one dies (ZooKeeper's tickTime bounds it: 2 to 20 ticks).
ZK_SESSION_MS, ZK_TICK_MS = 5000, 500

HostOf = Callable[[str], str]
PortsOf = Callable[[str], dict[str, int]]


def name_dir(data: Path, service: str) -> Path:
    return data / ("nn2" if service == "namenode2" else "nn")


def shared_edits(data: Path) -> Path:
    return data / "nn-shared"


def zk_conf(conf: Path) -> Path:
    return conf / "zoo.cfg"


def daemon_args(name: str, data: Path, conf: Path) -> list[str]:
    """What follows the main class of daemon ``name`` on an HA cluster."""
    ids = {service: nn for nn, service in NAMENODES.items()}
    if name in ids:
        args = ["-D", f"dfs.ha.namenode.id={ids[name]}"]
        return [*args, "-D", f"dfs.namenode.name.dir=file://{name_dir(data, name)}"]
    rms = {service: rm for rm, service in RESOURCEMANAGERS.items()}
    if name in rms:
        return ["-D", f"yarn.resourcemanager.ha.id={rms[name]}"]
    if name == ZOOKEEPER:
        return [str(zk_conf(conf))]
    return []


def service_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """The plain cluster's start order ``names`` with ZooKeeper first and each second master
    right after its first."""
    second = {"namenode": "namenode2", "resourcemanager": "resourcemanager2"}
    return (ZOOKEEPER, *(n for name in names for n in (name, second.get(name)) if n))


def zoo_cfg(host_of: HostOf, ports: PortsOf, data: Path) -> str:
    """ZooKeeper's own config: loopback only, no admin web server (it would take port 8080)."""
    return (
        f"tickTime={ZK_TICK_MS}\ndataDir={data / ZOOKEEPER}\n"
        f"clientPort={ports(ZOOKEEPER)['client']}\nclientPortAddress={host_of(ZOOKEEPER)}\n"
        "admin.enableServer=false\n"
    )


def apply(host_of: HostOf, ports: PortsOf, data: Path, core: dict, hdfs: dict, yarn: dict) -> None:
    """Turn the plain cluster's site settings into the HA ones, in place."""
    core.update(core_site(host_of, ports))
    for site, (props, single) in (
        (hdfs, hdfs_site(host_of, ports, data)),
        (yarn, yarn_site(host_of, ports)),
    ):
        for key in single:
            site.pop(key, None)
        site.update(props)


def core_site(host_of: HostOf, ports: PortsOf) -> dict[str, object]:
    zk = f"{host_of(ZOOKEEPER)}:{ports(ZOOKEEPER)['client']}"
    return {
        "fs.defaultFS": f"hdfs://{NAMESERVICE}",
        "hadoop.zk.address": zk,
        "hadoop.zk.timeout-ms": ZK_SESSION_MS,
    }


def hdfs_site(host_of: HostOf, ports: PortsOf, data: Path) -> tuple[dict[str, object], list[str]]:
    """The nameservice's settings, and the single-NameNode keys they replace (to drop)."""
    ns = NAMESERVICE
    props: dict[str, object] = {
        "dfs.nameservices": ns,
        f"dfs.ha.namenodes.{ns}": ",".join(NAMENODES),
        "dfs.namenode.shared.edits.dir": f"file://{shared_edits(data)}",
        f"dfs.client.failover.proxy.provider.{ns}": (
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
        ),
        # Only haadmin's -failover fences; the devcluster's failover kills with SIGKILL itself.
        "dfs.ha.fencing.methods": "shell(/bin/true)",
        # The standby reads the shared edits every second, not every minute: it is close
        # behind when it becomes active.
        "dfs.ha.tail-edits.period": "1s",
    }
    for nn, service in NAMENODES.items():
        host, p = host_of(service), ports(service)
        props[f"dfs.namenode.rpc-address.{ns}.{nn}"] = f"{host}:{p['rpc']}"
        props[f"dfs.namenode.http-address.{ns}.{nn}"] = f"{host}:{p['http']}"
    return props, ["dfs.namenode.rpc-address", "dfs.namenode.http-address"]


_RM_ADDRESSES = {
    "address": "client",
    "scheduler.address": "scheduler",
    "resource-tracker.address": "tracker",
    "admin.address": "admin",
    "webapp.address": "http",
}


def yarn_site(host_of: HostOf, ports: PortsOf) -> tuple[dict[str, object], list[str]]:
    """Both RMs' settings, and the single-RM keys they replace (to drop)."""
    p = "yarn.resourcemanager"
    props: dict[str, object] = {
        f"{p}.ha.enabled": "true",
        # The RMs' elector reads the YARN names of core-site's hadoop.zk.* (3.5 still does).
        f"{p}.zk-address": f"{host_of(ZOOKEEPER)}:{ports(ZOOKEEPER)['client']}",
        f"{p}.zk-timeout-ms": ZK_SESSION_MS,
        f"{p}.cluster-id": CLUSTER_ID,
        f"{p}.ha.rm-ids": ",".join(RESOURCEMANAGERS),
        f"{p}.ha.automatic-failover.enabled": "true",
        f"{p}.ha.automatic-failover.embedded": "true",
        f"{p}.recovery.enabled": "true",
        f"{p}.store.class": f"{RM_CLASS.rpartition('.')[0]}.recovery.ZKRMStateStore",
        f"{p}.work-preserving-recovery.enabled": "true",
        # Default 10 s in which a recovered RM allocates nothing while NMs report back.
        f"{p}.work-preserving-recovery.scheduling-wait-ms": 2000,
    }
    for rm, service in RESOURCEMANAGERS.items():
        host, rm_ports = host_of(service), ports(service)
        props[f"{p}.hostname.{rm}"] = host
        for key, port in _RM_ADDRESSES.items():
            props[f"{p}.{key}.{rm}"] = f"{host}:{rm_ports[port]}"
    return props, [f"{p}.hostname", *(f"{p}.{key}" for key in _RM_ADDRESSES)]


def apply_https(host_of: HostOf, ports: PortsOf, hdfs: dict, yarn: dict) -> None:
    """`up --ha --tls`: the single master's HTTPS addresses (``tls.py``) become one per id."""
    hdfs.pop("dfs.namenode.https-address", None)
    for nn, service in NAMENODES.items():
        address = f"{host_of(service)}:{ports(service)['https']}"
        hdfs[f"dfs.namenode.https-address.{NAMESERVICE}.{nn}"] = address
    key = "yarn.resourcemanager.webapp.https.address"
    yarn.pop(key, None)
    for rm, service in RESOURCEMANAGERS.items():
        yarn[f"{key}.{rm}"] = f"{host_of(service)}:{ports(service)['https']}"
