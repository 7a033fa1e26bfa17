"""The hosts of a several-host devcluster (`up --hosts`): which daemon runs on which host, each
host's names and addresses, and the command line that runs a program on a host.

A host is a network namespace on this machine (its own interfaces, addresses and ports), entered
with a fresh UTS namespace (its own host name) and, away from the edge, a fresh mount namespace
in which the edge's files are hidden under empty tmpfs mounts. Addresses come from
198.18.0.0/15 only (RFC 2544, set aside for network tests and never routed): every host on the
bridge 198.18.0.0/24; the workers also on 198.19.0.0/24, a second bridge the edge is not on, so a
process that advertises the wrong interface is unreachable from the edge. Two clusters on one
machine use the same addresses on bridges of their own: namespaces never see each other.

With ``--ha`` (`up --hosts --ha`) one host more, ``master2``, holds the second of each pair of
masters (nn2, rm2), so that a pair never shares a host: a kill, a cut link or a full disk on one
master host leaves the other of each pair. ``master`` keeps nn1, rm1, ZooKeeper (and a KDC):
one host more is one namespace and two veths, no daemon more than `up --ha` on one host has; a
third master host for ZooKeeper alone would add nothing the tests can tell (one ZooKeeper is a
single point of failure wherever it runs, and the RMs' state store only). The NameNodes' shared
edits stay a directory (``ha.py`` says why): both master hosts see the cluster dir, bound back
past their tmpfs mounts, as two NameNodes would see one NFS export; no JournalNode JVMs. The
layout of `up --hosts` without --ha is unchanged, so every name it gives holds on both.

Everything here is a plan (pure data); ``netns.py`` makes it real and takes it down again.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import DevClusterError

EDGE = "edge"
HOST_NAMES = (EDGE, "master", "worker1", "worker2", "worker3")
# `up --hosts --ha` only: the second of each pair of masters.
MASTER2 = "master2"
ALL_HOST_NAMES = (*HOST_NAMES, MASTER2)
# The daemons' hosts; worker2 and worker3 (nm2, nm3) make the `gpu` partition, with the GPU
# resource: a job there survives the loss of one of them (tests/hosts/test_hosts_faults.py).
SERVICE_HOSTS = {
    "kdc": "master",
    "namenode": "master",
    "resourcemanager": "master",
    "zookeeper": "master",
    "namenode2": MASTER2,
    "resourcemanager2": MASTER2,
    "datanode": "worker1",
    "datanode2": "worker2",
    "nm1": "worker1",
    "nm2": "worker2",
    "datanode3": "worker3",
    "nm3": "worker3",
}
_OCTET = {EDGE: 10, "master": 11, MASTER2: 12, "worker1": 21, "worker2": 22, "worker3": 23}
PUBLIC_NET, PRIVATE_NET = "198.18.0", "198.19.0"
# Names of every namespace and interface of one cluster start with this and its tag.
PREFIX = "tj"
# Never hidden, whatever the edge's working dir or venv: a host without them cannot run.
_SYSTEM = frozenset(
    map(Path, ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin"))
) | frozenset(map(Path, ("/sys", "/usr", "/var", "/usr/lib", "/usr/bin", "/usr/local")))


def host_address(name: str) -> str:
    """Host ``name``'s address on the bridge every host shares (the same in every cluster)."""
    return f"{PUBLIC_NET}.{_OCTET[name]}"


@dataclass(frozen=True)
class Host:
    name: str
    netns: str
    address: str  # on the bridge every host shares
    private_address: str | None  # workers only: on the bridge the edge is not on

    @property
    def hides_edge_files(self) -> bool:
        return self.name != EDGE


@dataclass(frozen=True)
class Topology:
    """One cluster's hosts, named after ``tag`` (from the cluster dir) so that several clusters
    and the leftovers of a crashed one can be told apart; with ``ha``, ``master2`` too."""

    tag: str
    ha: bool = False

    @classmethod
    def for_dir(cls, root: Path, ha: bool = False) -> Topology:
        return cls(hashlib.sha256(str(root).encode()).hexdigest()[:6], ha)

    @property
    def names(self) -> tuple[str, ...]:
        return ALL_HOST_NAMES if self.ha else HOST_NAMES

    @property
    def prefix(self) -> str:
        return f"{PREFIX}{self.tag}"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    @property
    def private_bridge(self) -> str:
        return f"{self.prefix}-pr"

    @property
    def hosts(self) -> tuple[Host, ...]:
        return tuple(
            Host(
                name,
                f"{self.prefix}-{name}",
                host_address(name),
                f"{PRIVATE_NET}.{_OCTET[name]}" if name.startswith("worker") else None,
            )
            for name in self.names
        )

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    def veth(self, host: Host, private: bool = False) -> str:
        """The machine's end of a host's link (at most 15 characters, Linux's limit)."""
        return f"{self.prefix}{'p' if private else 'v'}{ALL_HOST_NAMES.index(host.name)}"

    @property
    def run_dir(self) -> Path:
        """Mount points that carry kept directories past the tmpfs mounts (``host_command``)."""
        return Path("/run/tony-jupyter") / self.prefix

    def hosts_file(self) -> str:
        """The ``/etc/hosts`` every host sees (``ip netns exec`` binds /etc/netns/NS/hosts)."""
        rows = ["127.0.0.1\tlocalhost", *(f"{h.address}\t{h.name}" for h in self.hosts)]
        rows += [f"{h.private_address}\t{h.name}-private" for h in self.hosts if h.private_address]
        return "\n".join(rows) + "\n"


def hidden_paths(extra: list[Path] | None = None) -> list[Path]:
    """What hosts other than the edge must not see: the edge's home, working dir, /tmp and
    /dev/shm, the project checkout (with the one a git worktree belongs to), and the kernel's
    virtualenv and its base interpreter. Outermost only (a tmpfs over a path inside another
    tmpfs would have nowhere to go)."""
    # the checkout this code runs from, above devcluster/tony_jupyter_devcluster/ (installed: the
    # lib/pythonX.Y above site-packages, inside sys.prefix anyway)
    checkout = Path(__file__).resolve().parents[2]
    candidates = [
        Path.home(),
        Path.cwd(),
        Path("/tmp"),
        Path("/dev/shm"),
        checkout,
        *_main_checkout(checkout),
        Path(sys.prefix),
        Path(sys.base_prefix),
        *([Path(os.environ["VIRTUAL_ENV"])] if os.environ.get("VIRTUAL_ENV") else []),
        *(extra or []),
    ]
    paths = {Path(os.path.realpath(p)) for p in candidates}
    paths = {p for p in paths if p not in _SYSTEM and p.is_dir()}
    return sorted(p for p in paths if not any(q != p and q in p.parents for q in paths))


def _main_checkout(checkout: Path) -> list[Path]:
    """A git worktree's ``.git`` is a file naming ``<main>/.git/worktrees/<name>``."""
    try:
        text = (checkout / ".git").read_text()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []
    gitdir = Path(text.removeprefix("gitdir:").strip())
    return [p.parent for p in gitdir.parents if p.name == ".git"][:1]


def node_python() -> Path | None:
    """The machine's own interpreter of this kernel's minor version, outside every hidden
    path: the only Python a worker host has (None: the machine has none)."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    hidden = hidden_paths()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        found = shutil.which(name, path=directory)
        if found and not any(h == Path(found) or h in Path(found).parents for h in hidden):
            return Path(found)
    return None


def host_command(
    topology: Topology,
    host: Host,
    argv: list[str],
    hidden: list[Path],
    keep: list[Path],
) -> list[str]:
    """``argv`` run on ``host``: in its network namespace, under its host name, and away from
    the edge with ``hidden`` covered by empty tmpfs mounts, except ``keep`` (the cluster dir,
    its jars) bound back in place. Every step execs, so the pid is ``argv``'s own."""
    steps = ["set -e", f"hostname {shlex.quote(host.name)}"]
    if host.hides_edge_files:
        covered = [k for k in keep if any(h == k or h in k.parents for h in hidden)]
        stage = topology.run_dir / "keep"
        for i, path in enumerate(covered):
            steps.append(f"mount --bind {shlex.quote(str(path))} {stage}/{i}")
        for path in hidden:
            quoted = shlex.quote(str(path))
            steps.append(f"mount -t tmpfs -o mode=0755 tony-jupyter-hidden {quoted}")
        for i, path in enumerate(covered):
            quoted = shlex.quote(str(path))
            steps.append(f"mkdir -p {quoted} && mount --move {stage}/{i} {quoted}")
    steps.append('exec "$@"')
    return [
        "ip",
        "netns",
        "exec",
        host.netns,
        "unshare",
        "--mount",
        "--uts",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        "; ".join(steps),
        "sh",
        *argv,
    ]


@dataclass(frozen=True)
class Hosts:
    """What `up --hosts` decided, recorded in the cluster's state file so that `exec`, `down`
    and a restarted node use the same: the topology, what is hidden away from the edge, what
    is kept visible (the cluster dir and its jars), and the nodes' Python."""

    topology: Topology
    hidden: tuple[Path, ...]
    keep: tuple[Path, ...]
    python: Path

    @classmethod
    def plan(cls, root: Path, keep: list[Path], ha: bool = False) -> Hosts:
        python = node_python()
        if python is None:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            raise DevClusterError(
                f"`up --hosts` found no python{version} of the machine's own outside the kernel's "
                f"home, checkout and virtualenv, so worker hosts would have no Python at all. "
                f"Install one (Debian/Ubuntu: `apt-get install python{version}`), or run the "
                "kernel in an interpreter of a version the machine has."
            )
        resolved = tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in keep))
        return cls(Topology.for_dir(root, ha), tuple(hidden_paths()), resolved, python)

    def host(self, name: str) -> Host:
        try:
            return self.topology.host(name)
        except KeyError:
            raise DevClusterError(
                f"No host named {name!r} in this devcluster; its hosts are: "
                f"{', '.join(self.topology.names)}."
            ) from None

    def command(self, name: str, argv: list[str]) -> list[str]:
        return host_command(
            self.topology, self.host(name), argv, list(self.hidden), list(self.keep)
        )

    def to_json(self) -> dict:
        return {
            "tag": self.topology.tag,
            "ha": self.topology.ha,
            "hidden": [str(p) for p in self.hidden],
            "keep": [str(p) for p in self.keep],
            "python": str(self.python),
        }

    @classmethod
    def from_json(cls, data: dict) -> Hosts:
        return cls(
            Topology(data["tag"], bool(data.get("ha"))),
            tuple(map(Path, data["hidden"])),
            tuple(map(Path, data["keep"])),
            Path(data["python"]),
        )
