"""HTTPS for `devcluster up --tls`: the cluster's own CA, the daemons' keystore, and the settings.

Every web endpoint (ResourceManager with its web proxy, NameNode, DataNodes, NodeManagers) is
``HTTPS_ONLY``, its certificate signed by a CA that `up` makes once per cluster dir with the
JDK's ``keytool``: a CA key pair (``ca.p12``), one server keystore for every daemon
(``server.p12``: Hadoop's ``ssl-server.xml`` is per host, as a certificate is; here one
certificate names every host the daemons run on), and a truststore (``truststore.jks``) for
the daemons' own HTTPS clients (``ssl-client.xml``: the RM's web proxy, WebHDFS redirects).
Clients outside the JVMs take the CA as a PEM bundle, ``ca.pem`` (``TONY_CA_BUNDLE`` in
`devcluster env`).

The certificate names ``localhost`` and ``127.0.0.1`` (subjectAltName DNS and IP), so that
clients may use either, and a secure cluster (whose addresses say ``localhost``) the same; and
the hosts of `up --hosts` (``edge``, ``master``, ``worker1``, ``worker2``, with --ha ``master2``,
and their addresses),
whose daemons present the same certificate, each under its own host's name. A cluster dir whose
certificate was made for other names (``san``, beside it) gets a new CA and keystores.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import DevClusterError
from .hosts import ALL_HOST_NAMES, host_address

log = logging.getLogger(__name__)

# Hadoop's default HTTPS ports (the plain cluster's http ports' counterparts), shifted with the
# cluster's port offset like the rest. The NMs keep their 804x / 814x pattern.
HTTPS_PORTS = {"namenode": 9871, "datanode": 9865, "resourcemanager": 8090, "nm1": 8044}
HTTPS_PORTS |= {"nm2": 8144, "datanode2": 9865, "nm3": 8244, "datanode3": 9865}
# `up --ha --tls`: the second NameNode and ResourceManager, 10 above their first's (as their
# other ports are in ha.py).
HTTPS_PORTS |= {"namenode2": 9881, "resourcemanager2": 8190}
SAN = ",".join(
    ["dns:localhost", "ip:127.0.0.1"]
    + [f"dns:{name}" for name in ALL_HOST_NAMES]
    + [f"ip:{host_address(name)}" for name in ALL_HOST_NAMES]
)
_VALIDITY_DAYS = "3650"
CA_ENV = "TONY_CA_BUNDLE"  # the notebook side reads it (launcher/yarn/transport.py)


@dataclass(frozen=True)
class TlsFiles:
    """Where a TLS cluster keeps its CA, keystores and their password, under ``DIR/tls``."""

    root: Path

    @property
    def dir(self) -> Path:
        return self.root / "tls"

    @property
    def ca_store(self) -> Path:
        """The CA's key pair; signs the server certificate, never leaves the dir."""
        return self.dir / "ca.p12"

    @property
    def ca_pem(self) -> Path:
        """The CA certificate as PEM: the bundle clients verify against."""
        return self.dir / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.dir / "server.p12"

    @property
    def truststore(self) -> Path:
        return self.dir / "truststore.jks"

    @property
    def san_file(self) -> Path:
        """The subjectAltName the server certificate was made with."""
        return self.dir / "san"

    @property
    def password_file(self) -> Path:
        return self.dir / "password"

    def password(self) -> str:
        return self.password_file.read_text().strip()


def _keytool(java_home: Path, *args: str) -> None:
    cmd = [str(java_home / "bin" / "keytool"), *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except OSError as err:
        raise DevClusterError(
            f"Cannot run keytool ({err.strerror}) from JAVA_HOME={java_home}: `up --tls` makes "
            "the cluster's CA and keystores with the JDK's keytool. Point JAVA_HOME at a full JDK."
        ) from None
    if proc.returncode != 0:
        raise DevClusterError(
            f"keytool {args[0]} failed (exit {proc.returncode}) making the devcluster's TLS "
            f"files: {(proc.stderr or proc.stdout).strip()[-500:]}. Remove the tls dir of the "
            "cluster and run `up --tls` again."
        )


def prepare(files: TlsFiles, java_home: Path) -> None:
    """Make the CA, the server keystore and the truststores once; a cluster dir keeps them, so
    that bundles handed to clients stay valid across `down` and `up`."""
    made = [files.ca_pem, files.keystore, files.truststore, files.san_file]
    if all(f.is_file() for f in made) and files.san_file.read_text().strip() == SAN:
        return
    log.info("making the devcluster's CA and keystores in %s", files.dir)
    files.dir.mkdir(parents=True, exist_ok=True)
    for stale in files.dir.iterdir():  # half-made by an interrupted `up`: start over
        stale.unlink()
    password = secrets.token_urlsafe(18)
    files.password_file.touch(mode=0o600)
    files.password_file.write_text(password + "\n")
    pw = ["-storepass", password, "-keypass", password]
    key = ["-keyalg", "RSA", "-keysize", "2048", "-validity", _VALIDITY_DAYS]
    csr, signed = files.dir / "server.csr", files.dir / "server.pem"
    ca = ["-keystore", str(files.ca_store), "-storetype", "PKCS12", *pw]
    server = ["-keystore", str(files.keystore), "-storetype", "PKCS12", *pw]
    truststore = ["-keystore", str(files.truststore), "-storetype", "JKS", *pw]
    ca_ext = ["-ext", "bc:c", "-ext", "ku:c=keyCertSign,cRLSign"]
    server_ext = ["-ext", f"san={SAN}", "-ext", "ku:c=digitalSignature,keyEncipherment"]
    steps = [
        ["-genkeypair", "-alias", "ca", "-dname", "CN=tony-jupyter devcluster CA", *ca_ext]
        + [*key, *ca],
        ["-exportcert", "-rfc", "-alias", "ca", "-file", str(files.ca_pem), *ca],
        ["-genkeypair", "-alias", "server", "-dname", "CN=localhost", "-ext", f"san={SAN}"]
        + [*key, *server],
        ["-certreq", "-alias", "server", "-file", str(csr), *server],
        ["-gencert", "-alias", "ca", "-infile", str(csr), "-outfile", str(signed), "-rfc"]
        + ["-validity", _VALIDITY_DAYS, *server_ext, "-ext", "eku=serverAuth", *ca],
        # The chain: the CA first, then the signed certificate onto the server's key pair.
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(files.ca_pem), *server],
        ["-importcert", "-alias", "server", "-file", str(signed), *server],
        ["-importcert", "-noprompt", "-alias", "devcluster-ca", "-file", str(files.ca_pem)]
        + truststore,
    ]
    for args in steps:
        _keytool(java_home, *args)
    csr.unlink()
    signed.unlink()
    files.san_file.write_text(SAN + "\n")


def ssl_server(files: TlsFiles) -> dict[str, object]:
    """``ssl-server.xml``: what every daemon's HTTPS server presents."""
    pw = files.password()
    return {
        "ssl.server.keystore.location": files.keystore,
        "ssl.server.keystore.type": "pkcs12",
        "ssl.server.keystore.password": pw,
        "ssl.server.keystore.keypassword": pw,
        "ssl.server.truststore.location": files.truststore,
        "ssl.server.truststore.type": "jks",
        "ssl.server.truststore.password": pw,
    }


def ssl_client(files: TlsFiles) -> dict[str, object]:
    """``ssl-client.xml``: what the JVMs' own HTTPS clients trust (the RM's web proxy, the
    NameNode's redirects to DataNodes, an AM's Hadoop client)."""
    return {
        "ssl.client.truststore.location": files.truststore,
        "ssl.client.truststore.type": "jks",
        "ssl.client.truststore.password": files.password(),
    }


def hdfs_site(host_of, ports) -> dict[str, object]:
    """``host_of(name)`` and ``ports(name)`` as the layout has them."""
    nn, dn = ports("namenode"), ports("datanode")
    return {
        "dfs.http.policy": "HTTPS_ONLY",
        "dfs.namenode.https-address": f"{host_of('namenode')}:{nn['https']}",
        "dfs.datanode.https.address": f"{host_of('datanode')}:{dn['https']}",
        "dfs.client.https.need-auth": "false",
    }


def yarn_site(host_of, ports) -> dict[str, object]:
    rm = ports("resourcemanager")
    return {
        "yarn.http.policy": "HTTPS_ONLY",
        "yarn.resourcemanager.webapp.https.address": f"{host_of('resourcemanager')}:{rm['https']}",
    }


def yarn_site_nm(host: str, ports: dict[str, int]) -> dict[str, object]:
    return {"yarn.nodemanager.webapp.https.address": f"{host}:{ports['https']}"}
