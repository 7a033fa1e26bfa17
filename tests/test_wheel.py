"""What a user's `pip install tony-jupyter` gets: the wheel built from this checkout, listed.

The devcluster is its own distribution (devcluster/): tony-jupyter's wheel holds none of it and
names it only under the `devcluster` extra; the devcluster's wheel holds its package with the
files it reads at run time (the poms, log4j.properties, the Java it compiles), and nothing of
tony_jupyter. Built offline by the build backend in this venv (hatchling), without the
labextension's npm build (SKIP_JUPYTER_BUILDER: this test is about the Python part).
"""

import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(source: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> zipfile.ZipFile:
    """The wheel `pip wheel` builds, by hatchling's own builder in this process (pip's start-up
    and its build subprocess cost several seconds more and add nothing to what is listed)."""
    wheel_builder = pytest.importorskip(
        "hatchling.builders.wheel", reason="the build backend: bash dev/setup installs it"
    )
    monkeypatch.setenv("SKIP_JUPYTER_BUILDER", "1")
    out.mkdir()
    built = wheel_builder.WheelBuilder(str(source)).build(directory=str(out), versions=["standard"])
    return zipfile.ZipFile(next(iter(built)))


def metadata(wheel: zipfile.ZipFile) -> list[tuple[str, str]]:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return Parser().parsestr(wheel.read(name).decode()).items()


def test_the_wheel_holds_no_devcluster(tmp_path, monkeypatch):
    wheel = build_wheel(ROOT, tmp_path / "wheel", monkeypatch)
    names = wheel.namelist()
    assert "tony_jupyter/cli.py" in names and "tony_jupyter/core/jpms.py" in names
    assert [n for n in names if "devcluster" in n.lower()] == []
    assert {n.split("/")[0] for n in names if n.endswith(".py")} == {"tony_jupyter"}
    requires = [Requirement(v) for k, v in metadata(wheel) if k == "Requires-Dist"]
    (devcluster,) = [r for r in requires if r.name == "tony-jupyter-devcluster"]
    assert devcluster.marker is not None
    assert devcluster.marker.evaluate({"extra": "devcluster"})
    assert not devcluster.marker.evaluate({"extra": ""})


def test_the_devcluster_wheel_holds_the_devcluster_only(tmp_path, monkeypatch):
    wheel = build_wheel(ROOT / "devcluster", tmp_path / "wheel", monkeypatch)
    names = set(wheel.namelist())
    package = {n for n in names if not n.startswith("tony_jupyter_devcluster-")}
    assert {n.split("/")[0] for n in package} == {"tony_jupyter_devcluster"}
    read_at_run_time = {"pom.xml", "apps-pom.xml", "log4j.properties", "java/NodeLocalFs.java"}
    assert {f"tony_jupyter_devcluster/{n}" for n in read_at_run_time} <= names
    assert "tony_jupyter_devcluster/testing.py" in names  # the pytest plugin
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[tony_jupyter.commands]\ndevcluster = tony_jupyter_devcluster.cli:main" in text
    version = dict(metadata(wheel))["Version"]
    import tony_jupyter

    assert version == tony_jupyter.__version__
