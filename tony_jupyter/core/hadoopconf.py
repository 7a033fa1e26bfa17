"""The cluster's addresses, read from ``HADOOP_CONF_DIR`` (core-site, hdfs-site, yarn-site).

The notebook host needs no Hadoop install: only these XML files, or the two URLs given through
``TONY_YARN_RM_URL`` / ``TONY_WEBHDFS_URL``. Every address remembers where it came from, so an
"unreachable" message can name both the address tried and the setting that produced it.

High availability and TLS are read as Hadoop reads them: a nameservice's NameNodes
(``dfs.nameservices``, ``dfs.ha.namenodes.<ns>``, ``dfs.namenode.http(s)-address.<ns>.<nn>``,
else the RPC address's host with the default web port), the ResourceManagers of
``yarn.resourcemanager.ha.rm-ids`` (``webapp(.https).address.<id>``, else ``hostname.<id>``),
``dfs.http.policy`` / ``yarn.http.policy`` (``HTTPS_ONLY``: the HTTPS addresses), and a ViewFS
``fs.defaultFS`` through its mount table. An HA pair is one :class:`Address` whose ``url`` lists
every master, ``;``-separated (HdfsCLI's own form, which fails over between them); the clients
find the active one at each call (rm.py, staging.py).
"""

from __future__ import annotations

import getpass
import os
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from .errors import BackendError
from .protocol import ExecutorEnv

# Where the cluster is, without a HADOOP_CONF_DIR (or over it): the notebook host's settings.
# The NameNode's is the variable a task reads it from too (tony_jupyter.data, checkpoints).
RM_URL_ENV, WEBHDFS_URL_ENV = "TONY_YARN_RM_URL", ExecutorEnv.var("webhdfs_url")

# Hadoop's defaults (yarn-default.xml, hdfs-default.xml) when a key is absent.
RM_WEB_PORT = 8088
RM_WEB_HTTPS_PORT = 8090
NN_HTTP_PORT = 9870
NN_HTTPS_PORT = 9871
RM_RPC_PORT = 8032
# yarn-default.xml's yarn.application.classpath: where a tarball install keeps its jars.
DEFAULT_APP_CLASSPATH = (
    "$HADOOP_CONF_DIR",
    "$HADOOP_COMMON_HOME/share/hadoop/common/*",
    "$HADOOP_COMMON_HOME/share/hadoop/common/lib/*",
    "$HADOOP_HDFS_HOME/share/hadoop/hdfs/*",
    "$HADOOP_HDFS_HOME/share/hadoop/hdfs/lib/*",
    "$HADOOP_YARN_HOME/share/hadoop/yarn/*",
    "$HADOOP_YARN_HOME/share/hadoop/yarn/lib/*",
)


def read_site(path: Path) -> dict[str, str]:
    """``<configuration><property><name/><value/>`` as a dict; a missing file is empty."""
    if not path.is_file():
        return {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise BackendError(f"{path} is not valid XML ({e}); fix or regenerate it") from None
    props = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is not None and value is not None:
            props[name.strip()] = value.strip()
    return props


@dataclass(frozen=True)
class Address:
    """One master, or an HA pair: ``url`` is ``;``-separated then, in configuration order."""

    url: str
    source: str  # e.g. "yarn.resourcemanager.webapp.address in /etc/hadoop/yarn-site.xml"

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(u.rstrip("/") for u in self.url.split(";") if u.strip())

    def __str__(self) -> str:
        return f"{' or '.join(self.urls)} (from {self.source})"


@dataclass(frozen=True)
class HadoopConf:
    conf_dir: Path | None
    rm: Address
    webhdfs: Address
    default_fs: str
    user: str
    app_classpath: tuple[str, ...]
    # Secure mode, read from core-site (hadoop.security.authentication), never from a flag.
    secure: bool = False
    rm_principal: str = ""  # yarn.resourcemanager.principal, _HOST resolved: the renewer
    rm_token_service: str = ""  # the RM's RPC address as "ip:port", as Hadoop names tokens
    # The service of the default FS's HDFS token when it is a logical HA nameservice:
    # "ha-hdfs:<ns>", as Hadoop's DFSClient names it; "" keeps the NameNode's own "ip:port".
    hdfs_token_service: str = ""

    @classmethod
    def load(cls, conf_dir: str | Path | None = None) -> HadoopConf:
        conf_dir = conf_dir or os.environ.get("HADOOP_CONF_DIR")
        rm_env, nn_env = os.environ.get(RM_URL_ENV), os.environ.get(WEBHDFS_URL_ENV)
        if not conf_dir and not (rm_env and nn_env):
            raise BackendError(
                "the 'yarn' backend is not available: HADOOP_CONF_DIR is not set, so there is no "
                "cluster to submit to. Set HADOOP_CONF_DIR to the cluster's configuration "
                "directory (e.g. `eval $(tony-jupyter devcluster env)`), or use --backend local"
            )
        d = Path(conf_dir).expanduser() if conf_dir else None
        if d is not None and not d.is_dir():
            raise BackendError(
                f"HADOOP_CONF_DIR={d} is not a directory; point it at the cluster's "
                "configuration (core-site.xml, yarn-site.xml, hdfs-site.xml)"
            )
        core = read_site(d / "core-site.xml") if d else {}
        hdfs = read_site(d / "hdfs-site.xml") if d else {}
        yarn = read_site(d / "yarn-site.xml") if d else {}
        default_fs = core.get("fs.defaultFS", "")
        user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
        if default_fs.startswith("viewfs://"):
            # staging, history and tokens live under the user's home: its mount's filesystem
            default_fs = viewfs_target(core, default_fs, f"/user/{user}", d)
        rm = _rm_address(yarn, d, rm_env)
        webhdfs = _webhdfs_address(hdfs, default_fs, d, nn_env)
        cp = yarn.get("yarn.application.classpath")
        app_cp = (
            tuple(p.strip() for p in cp.split(",") if p.strip()) if cp else DEFAULT_APP_CLASSPATH
        )
        # (the user: Hadoop's own convention for choosing it under simple authentication)
        secure = core.get("hadoop.security.authentication", "simple").lower() == "kerberos"
        rm_principal = ""
        if secure:
            rm_principal = yarn.get("yarn.resourcemanager.principal", "")
            if not rm_principal:
                raise BackendError(
                    f"{d}/core-site.xml says the cluster uses Kerberos, but yarn-site.xml names "
                    "no yarn.resourcemanager.principal (the renewer of the job's delegation "
                    "tokens); copy the cluster's yarn-site.xml into HADOOP_CONF_DIR"
                )
            host = urlparse(rm.urls[0]).hostname or "localhost"
            rm_principal = rm_principal.replace("_HOST", host.lower())
        return cls(
            d,
            rm,
            webhdfs,
            default_fs,
            user,
            app_cp,
            secure,
            rm_principal,
            _rm_service(yarn),
            hdfs_token_service(hdfs, default_fs),
        )


# HAUtilClient.HA_DT_SERVICE_PREFIX + the scheme: "ha-hdfs:<nameservice>".
HA_HDFS_TOKEN_PREFIX = "ha-hdfs:"


def hdfs_token_service(hdfs: dict[str, str], default_fs: str) -> str:
    """The service Hadoop's own client gives an HDFS delegation token of ``default_fs``: on a
    logical nameservice with client failover (``dfs.client.failover.proxy.provider.<ns>``,
    other than IPFailoverProxyProvider, which keeps one physical address), DFSClient names it
    ``ha-hdfs:<ns>`` (HAUtilClient.buildTokenServiceForLogicalUri), so that any NameNode of
    the pair is reached with it (the client clones it for each NameNode's address) and the RM
    renews it through the nameservice; "" for one NameNode, whose "ip:port" WebHDFS gives."""
    u = urlparse(default_fs) if default_fs.startswith("hdfs://") else None
    if u is None or not u.hostname or u.port is not None:
        return ""
    provider = hdfs.get(f"dfs.client.failover.proxy.provider.{u.hostname}", "")
    if not provider or provider.endswith("IPFailoverProxyProvider"):
        return ""
    return f"{HA_HDFS_TOKEN_PREFIX}{u.hostname}"


def _rm_service(yarn: dict[str, str]) -> str:
    """The RM's client RPC address (yarn.resourcemanager.address, default port 8032) as
    Hadoop's SecurityUtil.buildTokenService writes it: the service of an RM delegation token,
    which the RM's renewer connects to. With HA, every RM's, comma-separated, as Hadoop's
    ClientRMProxy.getRMDelegationTokenService names it."""
    services = []
    for rm_id in _rm_ids(yarn) or [""]:
        sfx = f".{rm_id}" if rm_id else ""
        host = yarn.get(f"yarn.resourcemanager.hostname{sfx}", "0.0.0.0")  # noqa: S104 - read
        addr = yarn.get(f"yarn.resourcemanager.address{sfx}", f"{host}:{RM_RPC_PORT}")
        h, _, port = addr.rpartition(":")
        try:
            ip = socket.gethostbyname(h)
        except OSError:
            ip = h
        services.append(f"{ip}:{port}")
    return ",".join(services)


def _http(hostport: str, https: bool = False) -> str:
    if hostport.startswith(("http://", "https://")):
        return hostport
    return f"{'https' if https else 'http'}://{hostport}"


def _https_only(site: dict[str, str], key: str) -> bool:
    """``HTTPS_ONLY`` (HTTP_AND_HTTPS keeps the HTTP addresses, which still answer)."""
    return site.get(key, "HTTP_ONLY").strip().upper() == "HTTPS_ONLY"


def _rm_ids(yarn: dict[str, str]) -> list[str]:
    if yarn.get("yarn.resourcemanager.ha.enabled", "false").strip().lower() != "true":
        return []
    return [
        i.strip() for i in yarn.get("yarn.resourcemanager.ha.rm-ids", "").split(",") if i.strip()
    ]


def _rm_address(yarn: dict[str, str], d: Path | None, override: str | None) -> Address:
    if override:
        return Address(override.rstrip("/"), RM_URL_ENV)
    where = f"{Path(d or '.') / 'yarn-site.xml'}"
    https = _https_only(yarn, "yarn.http.policy")
    web = (
        "yarn.resourcemanager.webapp.https.address"
        if https
        else "yarn.resourcemanager.webapp.address"
    )
    port = RM_WEB_HTTPS_PORT if https else RM_WEB_PORT
    ids = _rm_ids(yarn)
    if ids:
        urls = []
        for rm_id in ids:
            if f"{web}.{rm_id}" in yarn:
                urls.append(_http(yarn[f"{web}.{rm_id}"], https))
            elif f"yarn.resourcemanager.hostname.{rm_id}" in yarn:
                urls.append(
                    _http(f"{yarn[f'yarn.resourcemanager.hostname.{rm_id}']}:{port}", https)
                )
            else:
                raise BackendError(
                    f"ResourceManager {rm_id!r} of yarn.resourcemanager.ha.rm-ids has no address "
                    f"in {where}: set {web}.{rm_id} or yarn.resourcemanager.hostname.{rm_id} "
                    "(copy the cluster's yarn-site.xml into HADOOP_CONF_DIR)"
                )
        return Address(
            ";".join(urls), f"yarn.resourcemanager.ha.rm-ids ({','.join(ids)}) in {where}"
        )
    if web in yarn:
        return Address(_http(yarn[web], https), f"{web} in {where}")
    host = yarn.get("yarn.resourcemanager.hostname", "0.0.0.0")  # noqa: S104 - read, not bound
    if host == "0.0.0.0":  # noqa: S104
        host = "127.0.0.1"  # yarn-default's hostname; the RM then listens on every interface
    return Address(
        _http(f"{host}:{port}", https),
        f"yarn.resourcemanager.hostname in {where}"
        if "yarn.resourcemanager.hostname" in yarn
        else f"Hadoop's default (nothing set in {where})",
    )


def _webhdfs_address(
    hdfs: dict[str, str], default_fs: str, d: Path | None, override: str | None
) -> Address:
    if override:
        return Address(override.rstrip("/"), WEBHDFS_URL_ENV)
    where = f"{Path(d or '.') / 'hdfs-site.xml'}"
    https = _https_only(hdfs, "dfs.http.policy")
    web = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    port = NN_HTTPS_PORT if https else NN_HTTP_PORT
    u = urlparse(default_fs) if default_fs.startswith("hdfs://") else None
    nameservices = [n.strip() for n in hdfs.get("dfs.nameservices", "").split(",") if n.strip()]
    if u is not None and u.hostname and u.port is None and u.netloc in nameservices:
        ns = u.netloc
        ids = [i.strip() for i in hdfs.get(f"dfs.ha.namenodes.{ns}", "").split(",") if i.strip()]
        if not ids:
            raise BackendError(
                f"fs.defaultFS names the nameservice {ns!r}, but {where} lists no "
                f"dfs.ha.namenodes.{ns}; copy the cluster's hdfs-site.xml into HADOOP_CONF_DIR"
            )
        urls = []
        for nn in ids:
            if f"{web}.{ns}.{nn}" in hdfs:
                urls.append(_http(hdfs[f"{web}.{ns}.{nn}"], https))
            elif f"dfs.namenode.rpc-address.{ns}.{nn}" in hdfs:
                rpc_host = hdfs[f"dfs.namenode.rpc-address.{ns}.{nn}"].rpartition(":")[0]
                urls.append(_http(f"{rpc_host}:{port}", https))
            else:
                raise BackendError(
                    f"NameNode {nn!r} of nameservice {ns!r} has no address in {where}: set "
                    f"{web}.{ns}.{nn} or dfs.namenode.rpc-address.{ns}.{nn}"
                )
        return Address(";".join(urls), f"dfs.ha.namenodes.{ns} ({','.join(ids)}) in {where}")
    if web in hdfs:
        return Address(_http(hdfs[web], https), f"{web} in {where}")
    host = u.hostname if u is not None else None
    if not host:
        raise BackendError(
            f"cannot find the NameNode: neither {web} ({d}/hdfs-site.xml) "
            f"nor an hdfs:// fs.defaultFS ({d}/core-site.xml) is set; set one, or set "
            f"{WEBHDFS_URL_ENV}=http://namenode:9870"
        )
    return Address(
        _http(f"{host}:{port}", https),
        f"fs.defaultFS in {Path(d or '.') / 'core-site.xml'} (default port)",
    )


def namenodes(url: str, conf_dir: str | Path) -> Address:
    """The web address(es) of the NameNode(s) serving ``url``, an ``hdfs://`` URL (one without a
    host is on ``fs.defaultFS``), as ``conf_dir`` gives them: what tony_jupyter.data reads."""
    d = Path(conf_dir).expanduser()
    core, hdfs = read_site(d / "core-site.xml"), read_site(d / "hdfs-site.xml")
    fs = url if urlparse(url).netloc else core.get("fs.defaultFS", "")
    return _webhdfs_address(hdfs, fs, d, None)


def viewfs_target(core: dict[str, str], default_fs: str, path: str, d: Path | None) -> str:
    """The ``hdfs://`` filesystem a ViewFS ``fs.defaultFS`` mounts ``path`` from: the longest
    ``fs.viewfs.mounttable.<table>.link.<dir>`` holding it, else the table's ``linkFallback``.
    The mount must keep the path (``/user`` → ``hdfs://ns1/user``): the job's files are then
    where every Hadoop client of the cluster finds them."""
    table = urlparse(default_fs).netloc or core.get(
        "fs.viewfs.mounttable.default.name.key", "default"
    )
    prefix = f"fs.viewfs.mounttable.{table}.link."
    best = ""
    for key in core:
        if key.startswith(prefix):
            mount = key[len(prefix) :].rstrip("/") or "/"
            inside = path == mount or path.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > len(best):
                best = mount
    where = f"{Path(d or '.') / 'core-site.xml'}"
    target = (
        core.get(prefix + best) if best else core.get(f"fs.viewfs.mounttable.{table}.linkFallback")
    )
    if not target:
        raise BackendError(
            f"fs.defaultFS is {default_fs}, but its mount table {table!r} in {where} mounts "
            f"nothing at {path} (the user's home, where jobs are staged) and has no linkFallback; "
            f"add fs.viewfs.mounttable.{table}.link./user=hdfs://<nameservice>/user"
        )
    t = urlparse(target)
    if t.scheme != "hdfs":
        raise BackendError(
            f"ViewFS mounts {best or '/'} from {target}: jobs are staged on HDFS only; mount the "
            "users' homes from an hdfs:// filesystem"
        )
    if best and t.path.rstrip("/") != best.rstrip("/"):
        raise BackendError(
            f"ViewFS mounts {best} from {target}, another path: mount it at the same path "
            f"({best} → hdfs://{t.netloc}{best}) for tony-jupyter's staging"
        )
    return f"hdfs://{t.netloc}"
