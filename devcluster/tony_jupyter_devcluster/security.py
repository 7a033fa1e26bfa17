"""Hadoop's secure mode for `devcluster up --secure`: principals, keytabs and the settings.

Every daemon authenticates with Kerberos against the cluster's own KDC (``kerberos.py``); every
HTTP endpoint asks for SPNEGO. Host names: each daemon binds ``localhost`` and ``_HOST`` becomes
``localhost`` (the NameNode, DataNode and RM take it from their bind address), which is also
what clients put in service principals: Hadoop's RPC client reverse-resolves 127.0.0.1, and
``krb5.conf`` turns off canonicalization so that `curl --negotiate http://localhost:...` asks for
``HTTP/localhost``. A URL with ``127.0.0.1`` in it cannot be used with SPNEGO.

On `up --hosts` each daemon binds its own host's name instead, so ``_HOST`` becomes that name
(``nn/master``, ``dn/worker1``, ``HTTP/worker2``): one keytab per kind holds the principals of
every host that runs that kind (``service_principals``), and the KDC runs on ``master``.

Containers run under DefaultContainerExecutor, as the OS user of the NodeManager (root here), not
as the YARN user: LinuxContainerExecutor would need a setuid ``container-executor`` binary, which
ships only in Hadoop's tarball (not on Maven Central) and must be root-owned at a path whose
parents are all root-owned, and OS accounts for alice and bob. YARN still tracks the submitting
user for ACLs, queues, HDFS access and tokens; only the Unix separation of containers is missing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from .hosts import SERVICE_HOSTS

REALM = "DEVCLUSTER.TEST"
# Host name in every service principal; see the module docstring.
KERBEROS_HOST = "localhost"
USERS = ("alice", "bob")  # user principals with keytabs, besides the cluster's operator
DAY_S = 24 * 3600

# One service principal (and keytab) per kind of daemon, as Hadoop's docs lay them out.
SERVICE_PRINCIPALS = {
    "nn": f"nn/_HOST@{REALM}",
    "dn": f"dn/_HOST@{REALM}",
    "rm": f"rm/_HOST@{REALM}",
    # Not _HOST: NodeManager.doSecureLogin resolves _HOST through the machine's canonical host
    # name, never yarn.nodemanager.hostname, and the RM checks it against the name of the
    # address the NM connects from (localhost). Where /etc/hosts gives the machine name for
    # 127.0.1.1 they differ; `hadoop.security.dns.interface=lo` would fix that but Hadoop 3.5's
    # DNS.reverseDns fails on lo's IPv6 address.
    "nm": f"nm/{KERBEROS_HOST}@{REALM}",
    "HTTP": f"HTTP/_HOST@{REALM}",
}
# What the service principals map to (hadoop.security.auth_to_local): the usual service users.
_SERVICE_USERS = {"nn": "hdfs", "dn": "hdfs", "rm": "yarn", "nm": "yarn"}

# Kerberos for authentication only on data transfer would leave block data unchecked; privacy
# (encryption) costs much CPU on 2 cores for nothing a loopback attacker could not see anyway.
DATA_TRANSFER_PROTECTION = "integrity"


# On `up --hosts`: which kind of principal each daemon logs in with (its host's name in it).
_DAEMON_KINDS = {
    "namenode": "nn",
    "datanode": "dn",
    "datanode2": "dn",
    "datanode3": "dn",
    "resourcemanager": "rm",
    "nm1": "nm",
    "nm2": "nm",
    "nm3": "nm",
}


def principal(kind: str, host: str = KERBEROS_HOST) -> str:
    """The concrete principal of service ``kind`` ("nn", ...) on ``host``, or of a user
    ("alice", ...)."""
    if kind in SERVICE_PRINCIPALS:
        return f"{kind}/{host}@{REALM}"
    return f"{kind}@{REALM}"


def service_principals(hosts: bool) -> dict[str, list[str]]:
    """Each service kind's concrete principals, all in that kind's one keytab: on one host
    ``<kind>/localhost``; on `up --hosts` one per host that runs a daemon of the kind
    (``dn/worker1``, ``dn/worker2``), and ``HTTP/<host>`` for every host with a web server."""
    if not hosts:
        return {kind: [principal(kind)] for kind in SERVICE_PRINCIPALS}
    out: dict[str, list[str]] = {kind: [] for kind in SERVICE_PRINCIPALS}
    for daemon, kind in _DAEMON_KINDS.items():
        host = SERVICE_HOSTS[daemon]
        for each in (kind, "HTTP"):
            if principal(each, host) not in out[each]:
                out[each].append(principal(each, host))
    return out


def nm_principal(hosts: bool, host: str) -> str:
    """The principal NodeManager on ``host`` logs in as (see SERVICE_PRINCIPALS["nm"])."""
    return principal("nm", host if hosts else KERBEROS_HOST)


@dataclass(frozen=True)
class Security:
    """The settings of a secure devcluster; recorded in ``cluster.json`` by `up`.

    The delegation-token lifetimes apply to both HDFS and YARN tokens; short ones let a test
    watch tokens being renewed and expiring (Hadoop's defaults: one day, seven days).
    """

    token_renew_interval_s: int = DAY_S
    token_max_lifetime_s: int = 7 * DAY_S

    def __post_init__(self) -> None:
        from .errors import DevClusterError

        if self.token_renew_interval_s < 1:
            raise DevClusterError(
                f"--token-renew-interval {self.token_renew_interval_s} must be at least 1 "
                "second (Hadoop's default is 86400)."
            )
        if self.token_max_lifetime_s < self.token_renew_interval_s:
            raise DevClusterError(
                f"--token-max-lifetime {self.token_max_lifetime_s} is shorter than "
                f"--token-renew-interval {self.token_renew_interval_s}; a token could never be "
                "renewed. Give a max lifetime at least as long as the renew interval."
            )

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Security:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})


class SecureLayout(Protocol):
    """Where the secure settings point (config.Layout has it; config imports this module)."""

    def keytab(self, name: str) -> Path: ...
    @property
    def http_secret(self) -> Path: ...
    @property
    def hosts(self) -> bool: ...


def auth_to_local() -> str:
    """Service principals to hdfs/yarn; one-part principals of the realm (alice, bob, the
    operator) to their own name; anything else (another realm, other services) is refused."""
    realm = REALM.replace(".", r"\.")
    rules = [
        f"RULE:[2:$1/$2@$0]({svc}/.*@{realm})s/.*/{user}/" for svc, user in _SERVICE_USERS.items()
    ]
    rules.append(f"RULE:[1:$1@$0](.*@{realm})s/@.*//")
    return "\n".join(rules)


def core_site(layout: SecureLayout, user: str) -> dict[str, object]:
    http_keytab = layout.keytab("HTTP")
    return {
        "hadoop.security.authentication": "kerberos",
        "hadoop.security.authorization": "true",  # service-level ACLs: hadoop-policy.xml
        "hadoop.security.auth_to_local": auth_to_local(),
        # alice and bob have no OS accounts: their groups (and the operator's superuser group)
        # come from here instead of `id`, which would log a failed lookup for each.
        "hadoop.user.group.static.mapping.overrides": (
            f"dr.who=;{user}=supergroup;hdfs=supergroup;yarn=yarn;"
            + ";".join(f"{u}={u}" for u in USERS)
        ),
        # SPNEGO on every web UI and REST API (the RM swaps in its own initializer, which also
        # takes RM delegation tokens).
        "hadoop.http.filter.initializers": (
            "org.apache.hadoop.security.AuthenticationFilterInitializer"
        ),
        "hadoop.http.authentication.type": "kerberos",
        "hadoop.http.authentication.simple.anonymous.allowed": "false",
        "hadoop.http.authentication.kerberos.principal": SERVICE_PRINCIPALS["HTTP"],
        "hadoop.http.authentication.kerberos.keytab": http_keytab,
        "hadoop.http.authentication.kerberos.name.rules": auth_to_local(),
        # One secret for all daemons: the hadoop.auth cookie of one is good at the others (all
        # are "localhost" to a browser, which sends them the same cookies).
        "hadoop.http.authentication.signature.secret.file": layout.http_secret,
    }


def hdfs_site(layout: SecureLayout, user: str, security: Security) -> dict[str, object]:
    return {
        "dfs.block.access.token.enable": "true",
        # Admin pages of the HDFS daemons (/logLevel, /stacks) for the operator too, not only
        # for hdfs (the YARN daemons take yarn.admin.acl).
        "dfs.cluster.administrators": f"{user},hdfs",
        "dfs.namenode.kerberos.principal": SERVICE_PRINCIPALS["nn"],
        "dfs.namenode.keytab.file": layout.keytab("nn"),
        "dfs.namenode.kerberos.internal.spnego.principal": SERVICE_PRINCIPALS["HTTP"],
        "dfs.datanode.kerberos.principal": SERVICE_PRINCIPALS["dn"],
        "dfs.datanode.keytab.file": layout.keytab("dn"),
        "dfs.web.authentication.kerberos.principal": SERVICE_PRINCIPALS["HTTP"],
        "dfs.web.authentication.kerberos.keytab": layout.keytab("HTTP"),
        "dfs.permissions.superusergroup": "supergroup",
        # A secure DataNode wants privileged ports (root + jsvc) or SASL on data transfer plus
        # HTTPS_ONLY. SASL is on (so the block data path is authenticated and checked); HTTP
        # stays plain, as in Hadoop's own secure MiniDFSCluster tests, so that WebHDFS clients
        # need no CA bundle. ignore.secure.ports.for.testing skips only the HTTPS requirement:
        # with a SASL resolver configured the DataNode still does SASL on every connection.
        "dfs.data.transfer.protection": DATA_TRANSFER_PROTECTION,
        "dfs.http.policy": "HTTP_ONLY",
        "ignore.secure.ports.for.testing": "true",
        "dfs.namenode.delegation.token.renew-interval": security.token_renew_interval_s * 1000,
        "dfs.namenode.delegation.token.max-lifetime": security.token_max_lifetime_s * 1000,
    }


def yarn_site(layout: SecureLayout, user: str, security: Security) -> dict[str, object]:
    http = SERVICE_PRINCIPALS["HTTP"]
    return {
        "yarn.resourcemanager.principal": SERVICE_PRINCIPALS["rm"],
        "yarn.resourcemanager.keytab": layout.keytab("rm"),
        # On hosts, the RM resolves _HOST to the name of the address each NM connects from;
        # each NM's own yarn-site names its host (config.py, nm_principal).
        "yarn.nodemanager.principal": f"nm/_HOST@{REALM}"
        if layout.hosts
        else SERVICE_PRINCIPALS["nm"],
        "yarn.nodemanager.keytab": layout.keytab("nm"),
        "yarn.resourcemanager.webapp.spnego-principal": http,
        "yarn.resourcemanager.webapp.spnego-keytab-file": layout.keytab("HTTP"),
        "yarn.nodemanager.webapp.spnego-principal": http,
        "yarn.nodemanager.webapp.spnego-keytab-file": layout.keytab("HTTP"),
        # The RM's web proxy runs inside the RM (no yarn.web-proxy.address), behind its SPNEGO.
        "yarn.acl.enable": "true",
        "yarn.admin.acl": f"{user},yarn",
        "yarn.resourcemanager.delegation.token.renew-interval": (
            security.token_renew_interval_s * 1000
        ),
        "yarn.resourcemanager.delegation.token.max-lifetime": (
            security.token_max_lifetime_s * 1000
        ),
        # Said out loud: see the module docstring for why not LinuxContainerExecutor.
        "yarn.nodemanager.container-executor.class": (
            "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor"
        ),
    }


def queue_acls(user: str) -> dict[str, object]:
    """Anyone may submit to the default queue, only the operator and bob to the gpu queue
    (so a test sees a user refused a queue); only the operator administers them (with the
    default "*" on root, any user could kill any other user's application)."""
    q = "yarn.scheduler.capacity.root"
    return {
        f"{q}.acl_submit_applications": " ",
        f"{q}.acl_administer_queue": f"{user},yarn",
        f"{q}.default.acl_submit_applications": "*",
        f"{q}.gpu.acl_submit_applications": f"{user},bob",
    }


def policy(user: str) -> dict[str, object]:
    """hadoop-policy.xml: daemon-to-daemon and admin protocols for their users only. The rest
    keep the default "*": users authenticate with Kerberos, and AMs and containers with tokens
    whose user is the application attempt, which no ACL could list."""
    admins = f"hdfs,yarn,{user}"
    return {
        "security.datanode.protocol.acl": "hdfs",
        "security.datanode.lifeline.protocol.acl": "hdfs",
        "security.inter.datanode.protocol.acl": "hdfs",
        "security.namenode.protocol.acl": "hdfs",
        "security.resourcetracker.protocol.acl": "yarn",
        "security.refresh.policy.protocol.acl": admins,
        "security.refresh.user.mappings.protocol.acl": admins,
        "security.refresh.callqueue.protocol.acl": admins,
        "security.generic.refresh.protocol.acl": admins,
        "security.reconfiguration.protocol.acl": admins,
        "security.ha.service.protocol.acl": admins,
        "security.resourcemanager-administration.protocol.acl": admins,
    }
