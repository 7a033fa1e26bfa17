"""The secure devcluster's KDC, keytabs and tickets, and SPNEGO from Python.

The KDC is MIT Kerberos (Debian's ``krb5-kdc``), not Apache Kerby (``hadoop-minikdc``): it is a
C daemon of about 6 MB that starts in milliseconds, where Kerby would be a sixth JVM on a 2-core
machine; ``kadmin.local`` writes one keytab per principal, where MiniKdc's ``main`` puts every
principal in one keytab; and the client side needs MIT's tools and GSSAPI library anyway
(``kinit``/``klist``, curl's ``--negotiate``, Python's ``gssapi``). It runs as whoever runs
`up`, from a database under ``DIR/kdc``, on 127.0.0.1 only, with no ``kadmind``. On `up --hosts`
it runs on the ``master`` host, at master's address only (krb5.conf's ``kdc`` names ``master``),
which the machine's own namespace cannot reach: a ``kinit`` from there goes through the edge's
network namespace (``via``, an argv prefix; empty where the KDC is reachable as it is).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from . import process
from .config import KDC, Layout
from .errors import DevClusterError
from .hosts import HOST_NAMES, SERVICE_HOSTS, host_address
from .security import KERBEROS_HOST, REALM, principal, service_principals

log = logging.getLogger(__name__)

# tool -> the Debian package that has it
_TOOLS = {
    "krb5kdc": "krb5-kdc",
    "klist": "krb5-user",
    "kdb5_util": "krb5-kdc",
    "kadmin.local": "krb5-admin-server",
    "kinit": "krb5-user",
}
_PACKAGES = "krb5-kdc krb5-admin-server krb5-user"
# The KDC tools live in sbin, which a non-root PATH may lack.
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
TICKET_LIFETIME = "1d"
TICKET_RENEWABLE = "7d"


def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))
    if path is None:
        raise DevClusterError(
            f"`{name}` (Debian package {_TOOLS.get(name, 'krb5-user')}) is not installed; "
            "`up --secure` runs an MIT Kerberos KDC on this machine. Install the tools "
            f"(Debian/Ubuntu: `apt-get install {_PACKAGES}`, as `dev/setup` does) and run "
            "`up --secure` again."
        )
    return path


def check_tools() -> None:
    for name in _TOOLS:
        tool(name)
    try:
        import requests_gssapi  # noqa: F401
    except ImportError as err:
        raise DevClusterError(
            f"Python's requests-gssapi is missing ({err}); `up --secure` checks the cluster "
            "through SPNEGO with it. Install tony-jupyter's kerberos extra: "
            "`pip install 'tony-jupyter[kerberos]'` (gssapi builds against MIT Kerberos: "
            "`apt-get install libkrb5-dev gcc` first)."
        ) from None


def check_hosts() -> None:
    """Service principals name ``localhost``: it must be 127.0.0.1 and the other way round."""
    try:
        infos = socket.getaddrinfo(KERBEROS_HOST, None, socket.AF_INET)
        forward = {str(info[4][0]) for info in infos}
        reverse = socket.gethostbyaddr("127.0.0.1")[0]
    except OSError as err:
        forward, reverse = {f"nothing ({err})"}, "nothing"
    if "127.0.0.1" not in forward or reverse != KERBEROS_HOST:
        raise DevClusterError(
            f"A secure devcluster needs `localhost` to resolve to 127.0.0.1 and back (here it "
            f"resolves to {', '.join(sorted(forward))}, and 127.0.0.1 back to {reverse!r}): "
            "its service principals are <service>/localhost, and Hadoop's RPC client finds a "
            "server's principal by reverse-resolving its address. Make `127.0.0.1 localhost` "
            "the first line for 127.0.0.1 in /etc/hosts."
        )


def kdc_address(layout: Layout) -> tuple[str, int]:
    """Where the KDC listens: 127.0.0.1, or on `up --hosts` the address of its host."""
    host = host_address(SERVICE_HOSTS[KDC]) if layout.hosts else "127.0.0.1"
    return host, layout.ports(KDC)["kdc"]


def _krb5_conf(layout: Layout) -> str:
    port = layout.ports(KDC)["kdc"]
    kdc = f"{SERVICE_HOSTS[KDC]}:{port}" if layout.hosts else f"127.0.0.1:{port}"
    names = HOST_NAMES if layout.hosts else (KERBEROS_HOST,)
    domain_realm = "".join(f"  {name} = {REALM}\n" for name in names)
    return f"""\
# Written by `tony-jupyter devcluster up --secure`: the devcluster's realm and KDC.
[libdefaults]
  default_realm = {REALM}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  # Principals are exactly what the URL or address says (HTTP/localhost), never a lookup.
  dns_canonicalize_hostname = false
  rdns = false
  # TCP: never a UDP round trip that is too big and retried.
  udp_preference_limit = 1
  ticket_lifetime = {TICKET_LIFETIME}
  renew_lifetime = {TICKET_RENEWABLE}
  forwardable = true
  # Silences the KDC's "No SPAKE preauth groups configured" at start-up.
  spake_preauth_groups = edwards25519

[realms]
  {REALM} = {{
    kdc = {kdc}
  }}

[domain_realm]
{domain_realm}"""


def _kdc_conf(layout: Layout) -> str:
    listen = ":".join(map(str, kdc_address(layout)))
    kdc_dir = layout.kdc_dir
    return f"""\
# Written by `tony-jupyter devcluster up --secure`.
[kdcdefaults]
  kdc_listen = {listen}
  kdc_tcp_listen = {listen}

[realms]
  {REALM} = {{
    database_name = {kdc_dir}/principal
    key_stash_file = {kdc_dir}/stash
    acl_file = {kdc_dir}/kadm5.acl
    max_life = {TICKET_LIFETIME}
    max_renewable_life = {TICKET_RENEWABLE}
  }}

[logging]
  kdc = STDERR
  default = STDERR
"""


def kdc_env(layout: Layout) -> dict[str, str]:
    return {
        **os.environ,
        "KRB5_CONFIG": str(layout.krb5_conf),
        "KRB5_KDC_PROFILE": str(layout.kdc_dir / "kdc.conf"),
    }


def _run(cmd: list[str], layout: Layout, what: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        text=True,
        env=kdc_env(layout),
        timeout=60,
        check=False,
    )
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise DevClusterError(f"{what} failed (exit {proc.returncode}): `{' '.join(cmd)}`:\n{out}")
    return out


def prepare(layout: Layout, users: list[str]) -> None:
    """Write krb5.conf and kdc.conf; create the realm's database, the principals of every
    service (of this layout's hosts) and user, and for each kind whose keytab is missing or
    lacks one of them that keytab (new keys). Needs no running KDC."""
    layout.kdc_dir.mkdir(parents=True, exist_ok=True)
    layout.krb5_conf.write_text(_krb5_conf(layout), encoding="utf-8")
    (layout.kdc_dir / "kdc.conf").write_text(_kdc_conf(layout), encoding="utf-8")
    if not (layout.kdc_dir / "principal").exists():
        master = secrets.token_urlsafe(24)  # stashed; nobody types it
        _run(
            [tool("kdb5_util"), "-r", REALM, "create", "-s", "-P", master],
            layout,
            "Creating the KDC database",
        )
    layout.keytabs.mkdir(mode=0o700, exist_ok=True)
    wanted = {**service_principals(layout.hosts), **{u: [principal(u)] for u in users}}
    kadmin = [tool("kadmin.local"), "-r", REALM]
    known = set(_run([*kadmin, "-q", "listprincs"], layout, "Listing principals").split())
    stale = {k: ps for k, ps in wanted.items() if set(ps) - _keytab_principals(layout, k)}
    if stale:
        script = ""
        for kind, principals in stale.items():
            layout.keytab(kind).unlink(missing_ok=True)
            script += "".join(f"addprinc -randkey {p}\n" for p in principals if p not in known)
            script += f"ktadd -k {layout.keytab(kind)} {' '.join(principals)}\n"
        out = _run(kadmin, layout, "Creating principals", script)
        absent = [kind for kind in stale if not layout.keytab(kind).exists()]
        if absent:
            raise DevClusterError(
                f"kadmin.local wrote no keytab for {', '.join(absent)}; it said:\n{out}"
            )
    if not layout.http_secret.exists():
        layout.http_secret.write_text(secrets.token_hex(32))
        layout.http_secret.chmod(0o600)


def _keytab_principals(layout: Layout, kind: str) -> set[str]:
    """The principals keytab ``kind`` holds (none when it does not exist)."""
    keytab = layout.keytab(kind)
    if not keytab.exists():
        return set()
    out = _run([tool("klist"), "-k", str(keytab)], layout, f"Listing {keytab}")
    return {word for word in out.split() if word.endswith(f"@{REALM}")}


def start_kdc(
    layout: Layout,
    alive: Callable[[], None],
    on_host: Callable[[list[str]], list[str]] = list,
    via: tuple[str, ...] = (),
) -> None:
    """Start the KDC (pid file ``run/kdc.pid``), its command line through ``on_host`` (on its
    own host), and wait until it listens, probed ``via``; ``alive()`` raises if it died
    meanwhile."""
    # -n: stay in the foreground, so that the pid `up` records is the KDC's own.
    pid = process.start(
        on_host([tool("krb5kdc"), "-n", "-r", REALM]),
        kdc_env(layout),
        layout.log_file(KDC),
        layout.pid_file(KDC),
    )
    log.info("started the KDC (pid %d) for realm %s", pid, REALM)
    wait_kdc(layout, time.monotonic() + 30, alive, via)


def kdc_pending(layout: Layout, via: tuple[str, ...] = ()) -> list[str]:
    host, port = kdc_address(layout)
    if via:  # a TCP connect from another namespace: bash's /dev/tcp, no tool of ours there
        probe = [*via, "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"]
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
        return ["the KDC"] if done.returncode != 0 else []
    with socket.socket() as sock:
        sock.settimeout(1.0)
        try:
            sock.connect((host, port))
        except OSError:
            return ["the KDC"]
    return []


def wait_kdc(
    layout: Layout, deadline: float, alive: Callable[[], None], via: tuple[str, ...] = ()
) -> None:
    """Until the KDC takes TCP connections; ``alive()`` raises if it died meanwhile."""
    while kdc_pending(layout, via):
        alive()
        if time.monotonic() > deadline:
            host, port = kdc_address(layout)
            raise DevClusterError(
                f"The KDC did not listen on {host}:{port} in time; see {layout.log_file(KDC)}."
            )
        time.sleep(0.05)


def kinit(layout: Layout, user: str, via: tuple[str, ...] = ()) -> Path:
    """A fresh ticket for ``user`` from its keytab in its own ccache; returns the ccache."""
    keytab = layout.keytab(user)
    if not keytab.exists():
        raise DevClusterError(
            f"No keytab for {user!r} in {layout.keytabs}; is the devcluster in {layout.root} a "
            "secure one (`up --secure`)?"
        )
    ccache = layout.ccache(user)
    ccache.parent.mkdir(mode=0o700, exist_ok=True)
    _run(
        [*via, tool("kinit"), "-kt", str(keytab), "-c", f"FILE:{ccache}", principal(user)],
        layout,
        f"kinit for {principal(user)}",
    )
    return ccache


def user_env(layout: Layout, user: str, via: tuple[str, ...] = ()) -> dict[str, str]:
    """What a shell needs to act as ``user``: a fresh ticket in its ccache, and where it is."""
    ccache = kinit(layout, user, via)
    return {
        "KRB5CCNAME": f"FILE:{ccache}",
        # For clients that log in again by themselves once the ticket expires.
        "TONY_DEVCLUSTER_PRINCIPAL": principal(user),
        "TONY_DEVCLUSTER_KEYTAB": str(layout.keytab(user)),
    }


def make_hdfs_homes(webhdfs_url: str, http: requests.Session, users: tuple[str, ...]) -> None:
    """/tmp for everyone (sticky), and a home dir owned by each user, mode 755; as the
    operator, an HDFS superuser through the supergroup."""
    dirs: dict[str, tuple[str | None, str]] = {"/tmp": (None, "1777"), "/user": (None, "755")}
    dirs.update({f"/user/{u}": (u, "755") for u in users})
    for path, (owner, mode) in dirs.items():
        calls = [{"op": "MKDIRS"}, {"op": "SETPERMISSION", "permission": mode}]
        if owner:
            calls.append({"op": "SETOWNER", "owner": owner, "group": owner})
        for params in calls:
            resp = http.put(f"{webhdfs_url}/webhdfs/v1{path}", params=params, timeout=10)
            if not resp.ok:
                raise DevClusterError(
                    f"Making {path} in HDFS failed: {params['op']} answered "
                    f"{resp.status_code} {resp.text[:300]}"
                )


@contextmanager
def _krb5_config(path: Path) -> Iterator[None]:
    """MIT's library reads KRB5_CONFIG from the environment each time it starts a context; this
    cluster's, only around our own calls (another cluster's may be set in this process)."""
    old = os.environ.get("KRB5_CONFIG")
    os.environ["KRB5_CONFIG"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("KRB5_CONFIG", None)
        else:
            os.environ["KRB5_CONFIG"] = old


class NoCredentials(requests.RequestException):
    """No ticket could be had for a SPNEGO call (the KDC is not up yet, or no longer): to the
    caller, a call that got no answer, as a refused connection is."""


class SpnegoSession(requests.Session):
    """A requests session that authenticates as ``user`` with SPNEGO, getting its tickets from
    the user's keytab into the user's ccache by itself (and again once they expire)."""

    def __init__(self, layout: Layout, user: str) -> None:
        super().__init__()
        self._layout = layout
        self.user = user

    def request(self, method, url, *args, **kwargs):
        with _krb5_config(self._layout.krb5_conf):
            if self.auth is None:
                self.auth = self._auth()
            return super().request(method, url, *args, **kwargs)

    def _auth(self) -> requests.auth.AuthBase:
        import gssapi
        from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

        ccache = self._layout.ccache(self.user)
        ccache.parent.mkdir(mode=0o700, exist_ok=True)
        try:
            creds = gssapi.Credentials(
                name=gssapi.Name(principal(self.user), gssapi.NameType.kerberos_principal),
                usage="initiate",
                store={
                    b"ccache": f"FILE:{ccache}".encode(),
                    b"client_keytab": str(self._layout.keytab(self.user)).encode(),
                },
            )
        except gssapi.exceptions.GSSError as err:
            # e.g. an HA cluster's probes for the active master while `up` has not yet
            # started the KDC: no answer yet, tried again at the next call.
            raise NoCredentials(f"no ticket for {principal(self.user)}: {err}") from None
        # OPTIONAL: WebHDFS's DataNode answers without a Negotiate header (it takes the token
        # in the redirect's URL), which REQUIRED would reject.
        return HTTPSPNEGOAuth(creds=creds, mutual_authentication=OPTIONAL)


def check_principal(root: Path, secure: bool, users: tuple[str, ...], user: str, what: str) -> None:
    """``user`` has a principal on the cluster in ``root`` (for `what`, e.g. `env --user`)."""
    if not secure:
        raise DevClusterError(
            f"`{what} {user}` needs a secure devcluster: the one in {root} runs without "
            "Kerberos, where clients name their user themselves (user.name). Restart it "
            "with `tony-jupyter devcluster down` and `up --secure`."
        )
    if user not in users:
        raise DevClusterError(
            f"No principal {user!r} on the devcluster in {root}; choose one of: {', '.join(users)}."
        )
