"""Which of a venv's files stay out of its packed archive: hidden files and files that may hold
credentials, unless a package installed them.

A venv is a directory anyone may have written into: a ``pip.conf`` with an index password, a
``.netrc``, a ``.env``, a private key, Jupyter's server settings (``etc/jupyter``: a server
token), a cloud credentials file. Every container of every later job unpacks the archive and can
read it. So the archive leaves out, by default, every hidden entry and every name of
``shipignore.SECRETS``, each said once when the venv is packed (``notice``), and a ``!`` line of
a ``.tonyignore`` at the venv's root brings one back (git's syntax, as for the shipped
directory; other lines there leave out more).

A file that a package installed is the package's own data and stays whatever its name
(certifi's ``cacert.pem``, a test key in a package, a package's ``.libs``): installed means
listed in the ``RECORD`` of a ``*.dist-info`` in the venv's ``site-packages``. The venv's own
``.gitignore`` and ``.lock`` (virtualenv's and uv's markers) hold nothing and are kept unsaid.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...core.shipignore import SECRETS

RULES_FILE = ".tonyignore"
HIDDEN = (".*",)
MARKERS = frozenset({".gitignore", ".lock", RULES_FILE})  # at the venv's root: kept or unsaid
SHOWN = 5


@dataclass(frozen=True)
class LeftOut:
    names: tuple[str, ...]  # relative to the venv; a directory ends with "/"

    def covers(self, rel: str) -> bool:
        """Whether the venv-relative path ``rel`` is left out (itself or a directory above)."""
        for name in self.names:
            if rel == name.rstrip("/") or (name.endswith("/") and rel.startswith(name)):
                return True
        return False

    def notice(self, prefix: Path) -> str:
        """One line naming what was left out and how to pack one ("" when nothing was)."""
        if not self.names:
            return ""
        more = f" and {len(self.names) - SHOWN} more" if len(self.names) > SHOWN else ""
        return (
            f"tony-jupyter: not packed from the venv {prefix}: {', '.join(self.names[:SHOWN])}"
            f"{more} (hidden, or may hold credentials); pack one with a '!NAME' line in "
            f"{prefix / RULES_FILE}"
        )


def rules(prefix: Path):
    """The venv's rules: hidden entries, then SECRETS, then its own ``.tonyignore``."""
    import pathspec

    lines = [*HIDDEN, *SECRETS]
    try:
        lines += (prefix / RULES_FILE).read_text(errors="replace").splitlines()
    except OSError:
        pass
    return pathspec.GitIgnoreSpec.from_lines(lines)


def installed(prefix: Path) -> set[str]:
    """Every venv-relative path that a ``RECORD`` of the venv's packages lists."""
    found: set[str] = set()
    for site in prefix.glob("lib/python*/site-packages"):
        for record in site.glob("*.dist-info/RECORD"):
            try:
                with open(record, newline="", errors="replace") as f:
                    rows = list(csv.reader(f))
            except OSError:
                continue
            for row in rows:
                if row and row[0]:
                    rel = os.path.normpath(os.path.join(site, row[0]))
                    found.add(os.path.relpath(rel, prefix).replace(os.sep, "/"))
    return found


def _parents(paths: set[str]) -> set[str]:
    out = set()
    for p in paths:
        while "/" in p:
            p = p.rsplit("/", 1)[0]
            if p in out:
                break
            out.add(p)
    return out


def left_out(prefix: Path) -> LeftOut:
    """What the archive of the venv at ``prefix`` leaves out by its rules."""
    spec = rules(prefix)
    own = installed(prefix)
    own_dirs = _parents(own)
    return LeftOut(tuple(_walk(prefix, spec, own, own_dirs)))


def _walk(prefix: Path, spec, own: set[str], own_dirs: set[str]) -> Iterator[str]:
    for root, dirs, files in os.walk(prefix):
        rel_root = os.path.relpath(root, prefix).replace(os.sep, "/")
        rel_root = "" if rel_root == "." else rel_root + "/"
        keep_dirs = []
        for d in sorted(dirs):
            rel = rel_root + d
            if os.path.islink(os.path.join(root, d)):
                files.append(d)  # a link is packed as a link: judged as a file
            elif rel in own_dirs or not spec.match_file(rel + "/"):
                keep_dirs.append(d)
            else:
                yield rel + "/"
        dirs[:] = [d for d in keep_dirs if d != "__pycache__"]
        for name in sorted(files):
            rel = rel_root + name
            if (not rel_root and name in MARKERS) or rel in own:
                continue
            if spec.match_file(rel):
                yield rel
