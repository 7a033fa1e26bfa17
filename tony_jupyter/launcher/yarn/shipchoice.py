"""Whether a packed venv takes its base interpreter along (``--ship-python``, ``tony.python.ship``):
the setting, the prefix's shape (interpreter.py), and what the doctor's probe last found on a
cluster's nodes, kept on this host per cluster.

``auto`` ships the interpreter when its prefix holds one CPython (it can run from another
path), unless the doctor's probe found that interpreter, at the same path and the same minor
version, on the cluster's nodes: then the venv runs on the nodes' own, and the job localizes one
archive less. A Python that cannot be shipped (a system ``/usr``) stays home; where the probe
did not find it on the nodes, that is said with the fixes, before anything is submitted (a
warning, not a refusal: the finding may be older than the nodes' Python). ``always`` ships it,
and refuses a prefix that cannot be shipped before anything is packed; ``never`` ships only the
venv, whose ``bin/python`` then leads to the nodes' own.

What the probe found is kept in ``<home>/doctor-pythons.json`` (``home``: the notebook side's,
``TONY_JUPYTER_HOME``), per cluster (its default filesystem and ResourceManagers) and per
prefix; a damaged or missing file is no finding, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import SpecError
from ..client import home
from . import interpreter

CHOICES = ("auto", "always", "never")
RECORD = "doctor-pythons.json"


@dataclass(frozen=True)
class Found:
    """What the doctor's probe found of an interpreter's path on a node."""

    present: bool  # the path runs there
    version: str  # its version there ("" when not present)
    node: str
    checked: float  # when (epoch seconds)


@dataclass(frozen=True)
class Choice:
    """The interpreter to ship (None: none) and why, in words for the user."""

    prefix: Path | None
    why: str


def cluster_key(conf) -> str:
    """A cluster as this host names it: its default filesystem and ResourceManagers."""
    return f"{conf.default_fs} {';'.join(conf.rm.urls)}"


def _path() -> Path:
    return home() / RECORD


def _read() -> dict:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def found(cluster: str, prefix: Path) -> Found | None:
    """What the probe last found of ``prefix``'s interpreter on ``cluster``'s nodes, if it ran."""
    entry = _read().get(cluster, {})
    got = entry.get(str(prefix)) if isinstance(entry, dict) else None
    if not isinstance(got, dict):
        return None
    try:
        return Found(
            bool(got["present"]), str(got["version"]), str(got["node"]), float(got["checked"])
        )
    except (KeyError, TypeError, ValueError):
        return None


def remember(cluster: str, prefix: Path, got: Found) -> None:
    """Keeps what the probe found (written whole, then renamed: a reader sees the old or the
    new file). Best effort: a home that cannot be written costs the finding only."""
    data = _read()
    entry = data.get(cluster)
    entry = entry if isinstance(entry, dict) else {}
    entry[str(prefix)] = {
        "present": got.present,
        "version": got.version,
        "node": got.node,
        "checked": got.checked,
    }
    data[cluster] = entry
    path = _path()
    part = path.with_name(f".{RECORD}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(part, path)
    except OSError as e:
        print(f"tony-jupyter: not kept ({path}): {e}", file=sys.stderr)
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def decide(choice: str, venv: Path, cluster: str | None) -> Choice:
    """The interpreter ``venv`` takes along under ``choice`` on ``cluster`` (None: unknown);
    a SpecError, naming the fix, for ``always`` with an interpreter that cannot go."""
    if choice not in CHOICES:
        raise SpecError(f"--ship-python: expected one of {', '.join(CHOICES)}, got {choice!r}")
    prefix = interpreter.base_prefix(venv)
    if choice == "never":
        where = f" at {prefix}" if prefix else ""
        return Choice(None, f"--ship-python never: the nodes are to have its Python{where}")
    if prefix is None:
        if choice == "always":
            raise SpecError(
                f"--ship-python always: the venv {venv} names no base interpreter that exists "
                "(pyvenv.cfg's home); make the venv again (python -m venv), or use "
                "--ship-python auto (nothing was submitted)"
            )
        return Choice(None, f"the venv {venv} names no base interpreter that exists here")
    why = interpreter.not_relocatable(prefix)
    got = found(cluster, prefix) if cluster else None
    if why is not None:
        if choice == "always":
            raise SpecError(
                f"--ship-python always: the venv's Python cannot run from another path: {why}. "
                "Make the venv from a Python installed in a prefix of its own (pyenv install, "
                "uv python install, python-build-standalone), or use --ship-python never with "
                f"a Python the nodes have at {prefix} (nothing was submitted)"
            )
        said = f"not shipped: {why}; the nodes are to have it at that path"
        if got is not None and not got.present:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(got.checked))
            said += (
                f", and the doctor's probe did not find it on {got.node} ({when}): unless it "
                "is there now, the job's containers stop at their start. Fixes: --pack-env "
                "VENV naming a venv made from the nodes' own Python, or from a Python in a "
                "prefix of its own (pyenv, uv), which goes with it; or --python PATH"
            )
        return Choice(None, said)
    if choice == "always":
        return Choice(prefix, "--ship-python always")
    want = interpreter.version(prefix) or ""
    if got is not None and got.present and _minor(got.version) == want:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(got.checked))
        return Choice(
            None,
            f"the doctor's probe found {prefix} (Python {got.version}) on {got.node} ({when}): "
            "the venv runs on the nodes' own; --ship-python always ships it anyway",
        )
    return Choice(prefix, "a prefix of one CPython, which the nodes may lack")
