"""Editable installs found in a venv (launcher/yarn/editables.py) in each form pip's backends
write, and packed with it (packenv.py) so the unpacked venv imports the same code without the
project directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tony_jupyter.core.errors import SpecError
from tony_jupyter.launcher.yarn import editables, packenv

FINDER = """\
import sys
from importlib.machinery import ModuleSpec
MAPPING: dict[str, str] = {{'mypkg': {pkg!r}, 'onemod': {mod!r}}}
NAMESPACES: dict[str, list[str]] = {{}}
PATH_PLACEHOLDER = '__editable__.mypkg-1.0.finder' + ".__path_hook__"

def install():
    pass
"""


def make_venv(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root, next((root / "lib").glob("python3*/site-packages"))


def project(tmp_path: Path, name: str, layout: str = "src") -> Path:
    top = tmp_path / f"proj-{name}"
    pkg = top / layout / name if layout else top / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"WHERE = 'the {name} project'\n")
    (pkg / ".env").write_text("TOKEN=secret\n")  # under the shipped directory's rules
    (top / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    return top


def dist_info(site: Path, dist: str, project_dir: Path) -> None:
    d = site / f"{dist}-1.0.dist-info"
    d.mkdir()
    url = project_dir.as_uri()
    (d / "direct_url.json").write_text(json.dumps({"url": url, "dir_info": {"editable": True}}))


@pytest.fixture
def three_forms(tmp_path: Path):
    root, site = make_venv(tmp_path)
    # PEP 660, setuptools' strict finder
    a = project(tmp_path, "mypkg")
    (a / "onemod.py").write_text("ONE = 1\n")
    (site / "__editable__.mypkg-1.0.pth").write_text(
        "import __editable___mypkg_1_0_finder; __editable___mypkg_1_0_finder.install()\n"
    )
    (site / "__editable___mypkg_1_0_finder.py").write_text(
        FINDER.format(pkg=str(a / "src" / "mypkg"), mod=str(a / "onemod.py"))
    )
    dist_info(site, "mypkg", a)
    # a path .pth (hatchling's, PDM's, setuptools' lenient mode)
    b = project(tmp_path, "hatchpkg")
    (site / "_hatchpkg.pth").write_text(str(b / "src"))  # hatchling writes no newline
    dist_info(site, "hatchpkg", b)
    # legacy `setup.py develop`: an .egg-link and a line in easy-install.pth
    c = project(tmp_path, "oldpkg", layout="")
    (site / "oldpkg.egg-link").write_text(f"{c}\n.")
    (site / "easy-install.pth").write_text(f"{c}\n")
    (site / "distutils-precedence.pth").write_text("import os; var = 'x'\n")  # not editable
    return root, site, (a, b, c)


def test_all_three_forms_and_direct_url_are_found(three_forms):
    root, site, (a, b, c) = three_forms
    found = editables.discover(root)
    rel = site.relative_to(root.resolve() if root.is_symlink() else root).as_posix()
    by_pth = {e.pth: e for e in found.editables}
    assert sorted(by_pth) == sorted(
        f"{rel}/{n}" for n in ("__editable__.mypkg-1.0.pth", "_hatchpkg.pth", "easy-install.pth")
    )
    finder = by_pth[f"{rel}/__editable__.mypkg-1.0.pth"]
    assert finder.roots == (
        editables.Root(editables.MAPPED, str(a / "src" / "mypkg"), "mypkg"),
        editables.Root(editables.MAPPED, str(a / "onemod.py"), "onemod"),
    )
    assert finder.dists == ("mypkg",)
    assert by_pth[f"{rel}/_hatchpkg.pth"].roots == (editables.Root(editables.PATH, str(b / "src")),)
    assert by_pth[f"{rel}/_hatchpkg.pth"].dists == ("hatchpkg",)
    assert by_pth[f"{rel}/easy-install.pth"].roots == (editables.Root(editables.PATH, str(c)),)
    assert found.projects == {"mypkg": str(a), "hatchpkg": str(b)}
    assert found.unknown == ()


def test_a_path_inside_the_venv_is_no_editable(tmp_path):
    root, site = make_venv(tmp_path)
    (site / "extra").mkdir()
    (site / "extra.pth").write_text("extra\n")
    assert editables.discover(root).editables == ()


def test_an_import_hook_it_cannot_follow_is_refused_by_name(tmp_path):
    root, site = make_venv(tmp_path)
    (site / "_editable_impl_thing.pth").write_text("import _editable_impl_thing\n")
    with pytest.raises(SpecError, match=r"_editable_impl_thing.pth installs a package editable"):
        packenv.content_hash(root)


def test_the_packed_venv_imports_the_same_code_without_the_project(three_forms, tmp_path):
    root, site, projects = three_forms
    out = tmp_path / "env.tar.gz"
    packenv.pack(root, out)
    with tarfile.open(out) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "unpacked", filter="tar")
    assert not [n for n in names if n.endswith("/.env")], names  # the rules held
    for p in projects:  # gone from this host: the copy is what imports
        shutil.move(p, tmp_path / f"moved-{p.name}")
    code = (
        "import mypkg, onemod, hatchpkg, oldpkg\n"
        "print(mypkg.WHERE, onemod.ONE, hatchpkg.WHERE, oldpkg.WHERE, sep='|')\n"
        "print(mypkg.__file__)\n"
    )
    py = tmp_path / "unpacked" / "bin" / "python"
    got = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True)
    first, where = got.stdout.splitlines()
    assert first == "the mypkg project|1|the hatchpkg project|the oldpkg project"
    assert where.startswith(str(tmp_path / "unpacked")), where


def test_an_edit_of_the_editable_code_makes_a_new_archive(three_forms):
    root, _, (a, b, _) = three_forms
    first = packenv.content_hash(root)
    assert packenv.content_hash(root) == first
    (b / "src" / "hatchpkg" / "__init__.py").write_text("WHERE = 'edited'\n")
    assert packenv.content_hash(root) != first
