"""The editable installs of a venv (``pip install -e``), found so their code goes with the packed
venv: ``import mypkg`` in a task gives the code the kernel imports.

An editable install leaves the package's code in its project directory and puts in
``site-packages`` only what points there, in one of these forms:

- a PEP 660 finder (setuptools): ``__editable__.<dist>.pth`` runs
  ``__editable___<dist>_finder.install()``, whose ``MAPPING`` names each top-level package's
  directory (or a module's file);
- a path ``.pth`` (hatchling, PDM, flit, setuptools' lenient mode, ``__editable__.*.pth`` with
  a path line; legacy ``setup.py develop``'s ``easy-install.pth`` beside a ``<dist>.egg-link``):
  a line naming a directory outside the venv, which Python puts on ``sys.path``;
- ``direct_url.json`` in the package's ``.dist-info`` says ``dir_info.editable`` and the project
  directory (``url``), which names the package in what is said to the user.

``discover`` returns each root to ship: a directory put on ``sys.path`` (``PATH``) or a package
directory or module file imported under its name (``MAPPED``). The packed venv holds each root's
files under ``site-packages/__tony_editable__/<n>/`` and a ``.pth`` pointing there in place of
the one pointing at the project (packenv.py), so a task imports the copy. A ``.pth`` that runs
an import hook this module does not know is not guessed at: ``unknown`` names it.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

PATH, MAPPED = "path", "mapped"
SHIPPED = "__tony_editable__"  # under site-packages, in the archive


@dataclass(frozen=True)
class Root:
    kind: str  # PATH: a sys.path entry; MAPPED: a package directory or module file
    source: str  # the local directory or file
    name: str = ""  # MAPPED: the top-level import name


@dataclass(frozen=True)
class Editable:
    pth: str  # the site-packages-relative .pth file that points at the code
    roots: tuple[Root, ...]
    dists: tuple[str, ...] = field(default=())  # the distributions it installs, for the user


@dataclass(frozen=True)
class Found:
    editables: tuple[Editable, ...]
    unknown: tuple[str, ...]  # .pth files running an import hook this module cannot follow
    projects: dict[str, str]  # distribution -> project directory, from direct_url.json


def site_packages(prefix: Path) -> list[Path]:
    return sorted(prefix.glob("lib/python*/site-packages"))


def _inside(path: str, prefix: Path) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([real, str(prefix)]) == str(prefix)


def finder_mapping(path: Path) -> dict[str, str]:
    """The ``MAPPING`` literal of a setuptools ``__editable___*_finder.py`` ({} if none)."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id == "MAPPING":
            try:
                got = ast.literal_eval(value)
            except ValueError:
                return {}
            if isinstance(got, dict):
                return {str(k): str(v) for k, v in got.items()}
    return {}


def projects(site: Path) -> dict[str, str]:
    """Each editable distribution's project directory, from its ``direct_url.json``."""
    out = {}
    for f in sorted(site.glob("*.dist-info/direct_url.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        info = data.get("dir_info") if isinstance(data, dict) else None
        url = data.get("url", "") if isinstance(data, dict) else ""
        if isinstance(info, dict) and info.get("editable") and str(url).startswith("file:"):
            dist = f.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
            out[dist] = unquote(urlparse(url).path)
    return out


def discover(prefix: Path) -> Found:
    """The editable installs of the venv at ``prefix``."""
    prefix = Path(os.path.realpath(prefix))
    editables, unknown, found_projects = [], [], {}
    for site in site_packages(prefix):
        found_projects.update(projects(site))
        for pth in sorted(site.glob("*.pth")):
            rel = os.path.relpath(pth, prefix)
            roots, hooks = _read_pth(pth, site, prefix)
            if roots:
                editables.append(Editable(rel, tuple(roots), _dists(pth, roots, found_projects)))
            elif hooks and pth.name.startswith(("__editable__", "_editable_impl_")):
                unknown.append(rel)
    return Found(tuple(editables), tuple(unknown), found_projects)


def _dists(pth: Path, roots: list[Root], found: dict[str, str]) -> tuple[str, ...]:
    names = []
    for dist, project in found.items():
        if any(
            os.path.commonpath([os.path.realpath(r.source), os.path.realpath(project)])
            == os.path.realpath(project)
            for r in roots
        ):
            names.append(dist)
    return tuple(names) or (pth.stem.removeprefix("__editable__.").removeprefix("_"),)


def _read_pth(pth: Path, site: Path, prefix: Path) -> tuple[list[Root], bool]:
    """The roots a .pth points at outside the venv, and whether it runs an import line."""
    try:
        lines = pth.read_text(errors="replace").splitlines()
    except OSError:
        return [], False
    roots, hooks = [], False
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("import ", "import\t")):
            hooks = True
            mapping = _finder_of(line, site)
            roots += [Root(MAPPED, src, name) for name, src in sorted(mapping.items())]
            continue
        path = os.path.normpath(os.path.join(site, line))
        if os.path.isdir(path) and not _inside(path, prefix):
            roots.append(Root(PATH, path))
    return [r for r in roots if os.path.exists(r.source)], hooks and not roots


def _finder_of(line: str, site: Path) -> dict[str, str]:
    """The MAPPING of the ``__editable___*_finder`` module an import line of a .pth installs."""
    for word in line.replace(";", " ").split():
        name = word.split(".")[0]
        if name.startswith("__editable___") and name.endswith("_finder"):
            return finder_mapping(site / f"{name}.py")
    return {}
