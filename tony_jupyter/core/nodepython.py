"""The job's Python on a node: checked at a container's start, before anything runs in it.

On a cluster whose nodes are other hosts, the Python a container is told to run may not be
there (a venv's ``bin/python`` leads to a base interpreter the node lacks), or may be another
minor version (whose site-packages the packed environment does not have). Either used to end in
a bare ``No such file or directory`` or ``No module named tony_jupyter``. A container's command
now runs a short check first; when it fails, the container's stderr says which host, which
interpreter (and where its link leads), which version was wanted and found, and the fixes, and
the container exits 127 at once.

Where the venv's base interpreter goes with the job (launcher/yarn/interpreter.py) it is
the ARCHIVE ``SHIPPED`` beside the venv ``env``, and ``prelude`` assembles a venv over both in
the container's directory first; its ``bin/python`` (``SHIPPED_PYTHON``) is the job's Python.

The check travels base64-encoded: a YARN container's command is run inside a double-quoted
``bash -c``, where quotes of its own would be mangled.
"""

from __future__ import annotations

import base64
import shlex
import sys

EXIT = 127  # what a shell answers for a command it cannot run

_CHECK = """\
py={py}; want={want}
host=$(hostname -f 2>/dev/null || hostname)
fix="Fixes: install Python $want at that path on every node, pack a venv made from the nodes' \
own Python $want (--pack-env VENV), or name a Python $want the nodes have (--python PATH)."
if [ -z "$want" ]; then fix="Fixes: name a Python the nodes have (--python PATH)."; fi
if ! [ -x "$py" ] && ! command -v "$py" >/dev/null 2>&1; then
  leads=""
  if [ -L "$py" ]; then leads=" (a link to $(readlink "$py"), which this host does not have)"; fi
  echo "tony-jupyter: on host $host the job's Python $py cannot run: no such file$leads. $fix" >&2
  exit {code}
fi
got=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1)
if [ $? -ne 0 ]; then
  echo "tony-jupyter: on host $host the job's Python $py does not start: $got. $fix" >&2
  exit {code}
fi
if [ -n "$want" ] && [ "$got" != "$want" ]; then
  echo "tony-jupyter: on host $host the job's Python $py is Python $got; the job needs \
Python $want (the notebook's, whose packages it runs). $fix" >&2
  exit {code}
fi
"""


def this_version() -> str:
    """The minor version of this interpreter, as the check compares it (``3.11``)."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def check_script(python: str, want: str | None) -> str:
    """The check as a bash script: exits 0 when ``python`` runs here (and is ``want``)."""
    return _CHECK.format(py=shlex.quote(python), want=shlex.quote(want or ""), code=EXIT)


def guarded(python: str, want: str | None, command: str, stderr: str) -> str:
    """``command`` (which runs ``python``) preceded by the check, whose words go to ``stderr``
    (the file the command's own stderr is appended to afterwards)."""
    script = base64.b64encode(check_script(python, want).encode()).decode()
    return f"echo {script} | base64 -d | bash 2>{stderr} && {command}"


SHIPPED = "pyhome"  # the shipped interpreter's ARCHIVE link name in a container
SHIPPED_VENV = ".tony-venv"  # the venv assembled over it in the container's directory
SHIPPED_PYTHON = f"{SHIPPED_VENV}/bin/python"


def prelude(version: str, env: str = "env") -> str:
    """Shell commands run first in a container: the venv ``SHIPPED_VENV`` assembled over the
    unpacked interpreter ``SHIPPED`` and the packed venv ``env``, ``libpython`` found in it."""
    v = shlex.quote(version)
    return (
        f'mkdir -p {SHIPPED_VENV}/bin && ln -sfn "$PWD/{SHIPPED}/bin/python"{v} '
        f"{SHIPPED_VENV}/bin/python && "
        f'ln -sfn "$PWD/{env}/lib" {SHIPPED_VENV}/lib && '
        f"printf 'home = %s\\ninclude-system-site-packages = false\\nversion = %s\\n' "
        f'"$PWD/{SHIPPED}/bin" {v} > {SHIPPED_VENV}/pyvenv.cfg && '
        f'export LD_LIBRARY_PATH="$PWD/{SHIPPED}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"'
    )


def launch(python: str, want: str | None, command: str, stderr: str) -> str:
    """``guarded``, preceded by ``prelude`` when ``python`` is the shipped interpreter's: the
    prelude travels base64-encoded like the check, written to a file and sourced, so what it
    exports holds for the command."""
    run = guarded(python, want, command, stderr)
    if python == SHIPPED_PYTHON and want:
        script = base64.b64encode(prelude(want).encode() + b"\n").decode()
        return f"echo {script} | base64 -d > {SHIPPED_VENV}.sh && . ./{SHIPPED_VENV}.sh && {run}"
    return run
