"""A :class:`~.hosts.Topology` made real with iproute2, and taken down again: namespaces, the
two bridges, a veth pair per host and interface, ``/etc/netns/<ns>/hosts``, and the mount points
under ``Topology.run_dir``.

The bridges carry no address on the machine itself: nothing in the machine's own namespace can
reach a host or be reached from one. `destroy` removes everything named with the topology's
prefix, whatever made it, so it also clears what a crashed `up` left behind.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import psutil

from .errors import DevClusterError
from .hosts import Topology

log = logging.getLogger("tony_jupyter_devcluster.cluster")

TOOLS = ("ip", "unshare", "mount", "hostname")
ETC_NETNS = Path("/etc/netns")


def require_root(what: str) -> None:
    """Namespaces, bridges and mounts are root's to make; say so before anything is made."""
    if os.geteuid() != 0:
        raise DevClusterError(
            f"{what} needs root: it makes network namespaces, a bridge, veth pairs and mounts, "
            f"which only root may (you run as uid {os.geteuid()}). Run it as root (e.g. "
            "`sudo -E tony-jupyter devcluster up --hosts`), or leave out --hosts for the "
            "one-host cluster."
        )
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise DevClusterError(
            f"{what} needs {', '.join(missing)} on PATH (iproute2 and util-linux; Debian/Ubuntu: "
            "`apt-get install iproute2 util-linux`)."
        )


def _ip(*args: str) -> str:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise DevClusterError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc.stdout


def create(topology: Topology, keep: int) -> None:
    """Make every host, after clearing what an earlier `up` left; on failure remove it all.
    ``keep``: how many mount points ``hosts.host_command`` stages kept directories on."""
    if destroy(topology):
        log.warning("removed the hosts an earlier `up --hosts` left behind (%s)", topology.prefix)
    try:
        for bridge in (topology.bridge, topology.private_bridge):
            _ip("link", "add", bridge, "type", "bridge")
            _ip("link", "set", bridge, "up")
        for host in topology.hosts:
            _ip("netns", "add", host.netns)
            etc = ETC_NETNS / host.netns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(topology.hosts_file())
            _ip("-n", host.netns, "link", "set", "lo", "up")
            links = [(topology.bridge, "eth0", host.address)]
            if host.private_address:
                links.append((topology.private_bridge, "eth1", host.private_address))
            for bridge, inside, address in links:
                outside = topology.veth(host, private=bridge == topology.private_bridge)
                # The peer is born in the namespace: the machine may have an eth0 of its own.
                peer = ("peer", "name", inside, "netns", host.netns)
                _ip("link", "add", outside, "type", "veth", *peer)
                _ip("link", "set", outside, "master", bridge, "up")
                _ip("-n", host.netns, "addr", "add", f"{address}/24", "dev", inside)
                _ip("-n", host.netns, "link", "set", inside, "up")
        for i in range(keep):
            (topology.run_dir / "keep" / str(i)).mkdir(parents=True, exist_ok=True)
    except BaseException:
        destroy(topology)
        raise
    log.info("made hosts %s", ", ".join(f"{h.name} {h.address}" for h in topology.hosts))


def set_link(topology: Topology, name: str, up: bool) -> list[str]:
    """Take host ``name``'s links (its veths on both bridges, the machine's ends) down or bring
    them up again: the host is cut off from every other, as by a pulled cable, while its
    processes run on. The names of the links set."""
    host = topology.host(name)
    if host.netns not in namespaces(topology):
        raise DevClusterError(f"Host {name} is not up (no namespace {host.netns}).")
    outside = [topology.veth(host)]
    if host.private_address:
        outside.append(topology.veth(host, private=True))
    for link in outside:
        _ip("link", "set", link, "up" if up else "down")
    return outside


def namespaces(topology: Topology) -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    names = [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]
    return [name for name in names if name.startswith(f"{topology.prefix}-")]


def links(topology: Topology) -> list[str]:
    listing = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = [line.split(":")[1].strip().split("@")[0] for line in listing.stdout.splitlines()]
    return [name for name in names if name.startswith(topology.prefix)]


def pids(netns: str) -> list[int]:
    listing = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    return [int(pid) for pid in listing.stdout.split()]


def leftovers(topology: Topology) -> list[str]:
    """Everything of this topology that exists now (empty once `destroy` has run)."""
    found = [f"netns {ns}" for ns in namespaces(topology)]
    found += [f"process {pid} in {ns}" for ns in namespaces(topology) for pid in pids(ns)]
    found += [f"link {name}" for name in links(topology)]
    if ETC_NETNS.is_dir():
        found += [str(p) for p in ETC_NETNS.glob(f"{topology.prefix}-*")]
    if topology.run_dir.exists():
        found.append(str(topology.run_dir))
    return found


def destroy(topology: Topology) -> bool:
    """Kill every process in the topology's namespaces, then remove the namespaces (their ends
    of the veth pairs and their mounts go with them), the bridges and the files. Whether
    anything was there."""
    existed = bool(leftovers(topology))
    for ns in namespaces(topology):
        procs = []
        for pid in pids(ns):
            try:
                procs.append(psutil.Process(pid))
                procs[-1].kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(procs, timeout=10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    for name in links(topology):
        subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
    if ETC_NETNS.is_dir():
        for etc in ETC_NETNS.glob(f"{topology.prefix}-*"):
            shutil.rmtree(etc, ignore_errors=True)
    shutil.rmtree(topology.run_dir, ignore_errors=True)
    return existed
