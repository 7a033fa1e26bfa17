"""The cluster's addresses, read from ``HADOOP_CONF_DIR`` (core-site, hdfs-site, yarn-site).

The notebook host needs no Hadoop install: only these XML files, or the two URLs given through
``TONY_YARN_RM_URL`` / ``TONY_WEBHDFS_URL``. Every address remembers where it came from, so an
"unreachable" message can name both the address tried and the setting that produced it.
"""

from __future__ import annotations

import getpass
import os
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ...errors import BackendError

# Hadoop's defaults (yarn-default.xml, hdfs-default.xml) when a key is absent.
RM_WEB_PORT = 8088
NN_HTTP_PORT = 9870
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
    url: str
    source: str  # e.g. "yarn.resourcemanager.webapp.address in /etc/hadoop/yarn-site.xml"

    def __str__(self) -> str:
        return f"{self.url} (from {self.source})"


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

    @classmethod
    def load(cls, conf_dir: str | Path | None = None) -> HadoopConf:
        conf_dir = conf_dir or os.environ.get("HADOOP_CONF_DIR")
        rm_env, nn_env = os.environ.get("TONY_YARN_RM_URL"), os.environ.get("TONY_WEBHDFS_URL")
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
        rm = _rm_address(yarn, d, rm_env)
        webhdfs = _webhdfs_address(hdfs, default_fs, d, nn_env)
        cp = yarn.get("yarn.application.classpath")
        app_cp = (
            tuple(p.strip() for p in cp.split(",") if p.strip()) if cp else DEFAULT_APP_CLASSPATH
        )
        # Hadoop's own convention for choosing the user under simple authentication.
        user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
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
            host = urlparse(rm.url).hostname or "localhost"
            rm_principal = rm_principal.replace("_HOST", host.lower())
        return cls(
            d, rm, webhdfs, default_fs, user, app_cp, secure, rm_principal, _rm_service(yarn)
        )


def _rm_service(yarn: dict[str, str]) -> str:
    """The RM's client RPC address (yarn.resourcemanager.address, default port 8032) as
    Hadoop's SecurityUtil.buildTokenService writes it: the service of an RM delegation token,
    which the RM's renewer connects to."""
    host = yarn.get("yarn.resourcemanager.hostname", "0.0.0.0")  # noqa: S104 - read, not bound
    addr = yarn.get("yarn.resourcemanager.address", f"{host}:{RM_RPC_PORT}")
    h, _, port = addr.rpartition(":")
    try:
        ip = socket.gethostbyname(h)
    except OSError:
        ip = h
    return f"{ip}:{port}"


def _http(hostport: str) -> str:
    return hostport if hostport.startswith("http") else f"http://{hostport}"


def _rm_address(yarn: dict[str, str], d: Path | None, override: str | None) -> Address:
    if override:
        return Address(override.rstrip("/"), "TONY_YARN_RM_URL")
    where = f"{Path(d or '.') / 'yarn-site.xml'}"
    if "yarn.resourcemanager.webapp.address" in yarn:
        return Address(
            _http(yarn["yarn.resourcemanager.webapp.address"]),
            f"yarn.resourcemanager.webapp.address in {where}",
        )
    host = yarn.get("yarn.resourcemanager.hostname", "0.0.0.0")  # noqa: S104 - read, not bound
    if host == "0.0.0.0":  # noqa: S104
        host = "127.0.0.1"  # yarn-default's hostname; the RM then listens on every interface
    return Address(
        f"http://{host}:{RM_WEB_PORT}",
        f"yarn.resourcemanager.hostname in {where}"
        if "yarn.resourcemanager.hostname" in yarn
        else f"Hadoop's default (nothing set in {where})",
    )


def _webhdfs_address(
    hdfs: dict[str, str], default_fs: str, d: Path | None, override: str | None
) -> Address:
    if override:
        return Address(override.rstrip("/"), "TONY_WEBHDFS_URL")
    if "dfs.namenode.http-address" in hdfs:
        return Address(
            _http(hdfs["dfs.namenode.http-address"]),
            f"dfs.namenode.http-address in {Path(d or '.') / 'hdfs-site.xml'}",
        )
    host = urlparse(default_fs).hostname if default_fs.startswith("hdfs://") else None
    if not host:
        raise BackendError(
            f"cannot find the NameNode: neither dfs.namenode.http-address ({d}/hdfs-site.xml) "
            f"nor an hdfs:// fs.defaultFS ({d}/core-site.xml) is set; set one, or set "
            "TONY_WEBHDFS_URL=http://namenode:9870"
        )
    return Address(
        f"http://{host}:{NN_HTTP_PORT}",
        f"fs.defaultFS in {Path(d or '.') / 'core-site.xml'} (default port)",
    )
