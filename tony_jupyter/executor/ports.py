"""A port for a server the task starts later (TensorFlow's gRPC server, TensorBoard, torch's
store): picked free now, bound by that server seconds later, so picked where nothing else on
the host is handed ports meanwhile.

A port the kernel hands out for ``bind(port 0)`` or an outgoing connection comes from the
ephemeral range (``net.ipv4.ip_local_port_range``, 32768-60999 by default). One picked there and
let go is soon handed to one of the many connections a busy node makes (heartbeats, HDFS,
YARN's own): TensorFlow's server then fails with "Failed to add port". Holding the port with
``SO_REUSEPORT`` until the server binds would close the window, but TensorFlow's gRPC server
turns reuse off and cannot bind beside it. So the port is picked at random just below the
ephemeral range, where only servers that name their own port bind, and checked free on every
interface (TensorFlow binds them all). Where that span is too low (a range starting under
``LOWEST + SPAN``), it is the kernel's pick, as before.
"""

from __future__ import annotations

import errno
import random
import socket
from pathlib import Path

SPAN = 16384  # ports just below the ephemeral range to pick from (two tasks rarely pick one)
LOWEST = 10000  # never below: the well-known and registered services' ports
TRIES = 32
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_start(path: Path = RANGE_FILE) -> int | None:
    """The first port of the kernel's ephemeral range, or None where it cannot be read."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def reserve_port(host: str = "127.0.0.1", start: int | None = -1) -> int:
    """A port free on ``host`` and on every interface now, below the ephemeral range (module
    docstring); the kernel's pick on ``host`` where that range cannot be read or starts too low
    (``host`` not an address of this one: any)."""
    start = ephemeral_start() if start == -1 else start
    if start is not None and start - SPAN >= LOWEST:
        for port in random.sample(range(start - SPAN, start), TRIES):
            if _free("", port) and _free(host, port):
                return port
    return _kernels_pick(host)


def _free(host: str, port: int) -> bool:
    """Nothing bound at ``port`` on ``host`` (a name that is no address of this host cannot be
    bound at all: then only every interface's check counts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as e:
            return e.errno != errno.EADDRINUSE
        return True


def _kernels_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, 0))
        except OSError:  # a name that is not an address of this host: any, as before
            s.bind(("", 0))
        return s.getsockname()[1]
