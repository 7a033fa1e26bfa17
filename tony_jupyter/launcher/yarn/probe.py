"""The doctor's probe: one short container on the cluster, run by the Python a job would use
there, with nothing of ours installed (the script goes on its command line). It reports what
that Python is (and, for a packed venv, whether its base interpreter is on the node at its
path), listens on its node for the notebook host (the way the Jupyter server reaches an
AM or a TensorBoard there), and tries the ways a job's AM needs from a node (the RM, the
NameNode). The doctor reads its report over that one connection (launcher/doctor.py).

Stdlib only, and Python 3.6's: the node's interpreter may be older than ours.
"""

from __future__ import annotations

import base64
import shlex

# argv: this script (base64), PORT (the first of PORTS ports to try), the addresses
# "host:port,..." to try from here, and an interpreter's path to look for ("": none).
SCRIPT = r"""
import json, os, platform, socket, subprocess, sys, time
port, tries, targets = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
base = sys.argv[5] if len(sys.argv) > 5 else ""
host = os.environ.get("NM_HOST") or socket.getfqdn()
def look(path):
    out = {"path": path, "present": False, "version": ""}
    try:
        got = subprocess.run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                             universal_newlines=True)
    except (OSError, subprocess.SubprocessError) as e:
        out["error"] = str(e)
        return out
    if got.returncode == 0:
        out.update(present=True, version=got.stdout.strip())
    else:
        out["error"] = " ".join(got.stderr.split())[-300:]
    return out
def reach(hp):
    h, _, p = hp.rpartition(":")
    t = time.time()
    try:
        socket.create_connection((h, int(p)), timeout=5).close()
        return {"address": hp, "ok": True, "ms": round((time.time() - t) * 1000)}
    except OSError as e:
        return {"address": hp, "ok": False, "error": str(e)}
report = {
    "host": host,
    "python": sys.executable,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "platform": platform.platform(),
    "reached": [reach(hp) for hp in targets.split(",") if hp],
}
if base:
    report["base"] = look(base)
srv = None
for p in range(port, port + tries):
    try:
        srv = socket.socket()
        srv.bind((host, p))
        srv.listen(1)
        break
    except OSError:
        srv.close()
        srv = None
if srv is None:
    sys.exit("no free port in %d-%d on %s" % (port, port + tries - 1, host))
print("probe listening on %s:%d" % (host, srv.getsockname()[1]), flush=True)
srv.settimeout(120)
conn, _ = srv.accept()
conn.sendall(json.dumps(report).encode() + b"\n")
conn.close()
"""
PORTS = 20  # ports tried from the one the doctor picks, should one be taken on the node


def command(python: str, port: int, targets: list[str], base: str = "") -> str:
    """The container's command line (YARN runs it with bash); ``base``: an interpreter whose
    presence on the node the report says (a packed venv's base, whether shipped or not)."""
    code = base64.b64encode(SCRIPT.encode()).decode()
    # No quote inside: YARN's launch script mangles nested quoting.
    boot = "import sys,base64;exec(base64.b64decode(sys.argv[1]))"
    words = (code, str(port), str(PORTS), ",".join(targets)) + ((base,) if base else ())
    args = " ".join(shlex.quote(a) for a in words)
    return (
        f"{shlex.quote(python)} -c {shlex.quote(boot)} {args} "
        "1><LOG_DIR>/probe.stdout 2><LOG_DIR>/probe.stderr"
    )
