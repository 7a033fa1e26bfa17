"""A venv the user names (``--pack-env``): found and checked, and which Python it says it is.

Flag parsing checks the directory (options.py, before anything is submitted) and the YARN
launcher packs it (launcher/yarn/packenv.py): both read it here, so parsing flags imports
nothing of the packing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import SpecError


def venv_root(path: str | None) -> Path:
    """The venv at ``path`` (default: this kernel's, ``sys.prefix``), or a SpecError."""
    raw = path or sys.prefix
    p = Path(raw).expanduser()
    if not p.is_dir():
        raise SpecError(f"--pack-env {raw}: no such directory; name a venv (python -m venv)")
    p = p.resolve()
    if not (p / "pyvenv.cfg").is_file():
        conda = " (it looks like a conda environment)" if (p / "conda-meta").is_dir() else ""
        raise SpecError(
            f"--pack-env {raw}: not a venv, no pyvenv.cfg in {p}{conda}. --pack-env packs a "
            "virtual environment made by `python -m venv` or virtualenv; conda environments are "
            "not supported. Or leave it out and use --python PATH for a Python already on the "
            "cluster's nodes"
        )
    return p


def pyvenv_cfg(venv: Path) -> dict[str, str]:
    """The venv's ``pyvenv.cfg`` as its keys and values (``home``, ``version``, ...); empty when
    there is none to read."""
    out: dict[str, str] = {}
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def venv_version(root: Path) -> str | None:
    """The venv's minor Python version (``3.11``), from its ``pyvenv.cfg``; None if unsaid."""
    cfg = pyvenv_cfg(root)
    for key in ("version", "version_info"):
        parts = cfg.get(key, "").split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return f"{parts[0]}.{parts[1]}"
    return None
