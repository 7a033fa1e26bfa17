"""dev/suite.py (the tiers, partitions and the path map of dev/test) and tests/tiers.py (what
runs in the full tier only): the map picks the right areas, names only paths that exist, and a
partition that runs too few tests or past its limit fails with the reason."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from tiers import FULL_ONLY, matches

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("suite", ROOT / "dev" / "suite.py")
assert _spec and _spec.loader
suite = importlib.util.module_from_spec(_spec)
sys.modules["suite"] = suite
_spec.loader.exec_module(suite)


@pytest.mark.parametrize(
    ("path", "areas"),
    [
        ("devcluster/tony_jupyter_devcluster/ha.py", ["yarn", "ha"]),
        ("tony_jupyter/core/hadoopconf.py", ["yarn", "ha"]),
        ("tony_jupyter/launcher/yarn/secure.py", ["yarn", "secure"]),
        ("devcluster/tony_jupyter_devcluster/netns.py", ["yarn", "hosts"]),
        ("labextension/src/panel.ts", ["browser"]),
        ("tony_jupyter/executor/frameworkenv.py", ["frameworks"]),
        ("tony_jupyter/core/tonyconf.py", ["examples"]),
        ("bench/startup.py", ["bench"]),
        ("tests/tls/test_tls_jobs.py", ["tls"]),
        ("README.md", []),
        ("tony_jupyter/am/coordinator.py", []),
    ],
)
def test_a_changed_path_picks_its_areas(path, areas):
    assert suite.areas_for([path]) == areas


def test_every_glob_of_the_path_map_matches_a_file_that_exists():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    files += [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")]
    for area in suite.AREAS:
        for glob in area.globs:
            assert any(suite.fnmatch.fnmatch(f, glob) for f in files), f"{area.name}: {glob}"


def _tests_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    }


def test_every_full_tier_entry_names_a_test_that_exists_and_says_what_covers_it():
    for entry, cover in FULL_ONLY.items():
        assert len(cover) > 20, entry
        path = entry.split("::")[0]
        assert (ROOT / path).exists(), entry
        if "[!" in entry:
            assert entry.endswith("]")
        if "::" in entry and "::*" not in entry:
            name = entry.split("::")[1].split("[")[0]
            assert name in _tests_of(ROOT / path), entry


def test_an_entry_matches_its_file_its_test_and_a_parametrization_only():
    nodeid = "tests/ha/test_ha_jobs.py::test_x[http]"
    assert matches(nodeid, "tests/ha/test_ha_jobs.py")
    assert matches(nodeid, "tests/ha")
    assert matches(nodeid, "tests/ha/test_ha_jobs.py::test_x")
    assert matches(nodeid, "tests/ha/test_ha_jobs.py::*[http]")
    assert not matches("tests/ha/test_ha_jobs.py::test_x[tls]", "tests/ha/test_ha_jobs.py::*[http]")
    assert not matches("tests/ha/test_ha_jobs.py::test_xy", "tests/ha/test_ha_jobs.py::test_x")
    assert not matches("tests/hasty.py::test_x", "tests/ha")
    assert matches(nodeid, "tests/ha/test_ha_jobs.py::test_x[!tls]")
    assert not matches(
        "tests/ha/test_ha_jobs.py::test_x[tls]", "tests/ha/test_ha_jobs.py::test_x[!tls]"
    )


def test_ci_deselects_the_full_tier_and_the_full_tier_runs_everything():
    assert suite._markexpr("yarn and not ha", "ci") == "(yarn and not ha) and not full"
    assert suite._markexpr("yarn and not ha", "full") == "yarn and not ha"
    names = [p.name for p in suite.PARTITIONS if p.in_tier("fast")]
    assert names == ["lint", "docs", "local"]
    ci = [p.name for p in suite.PARTITIONS if p.in_tier("ci")]
    assert ci == ["lint", "docs", "local", "browser", "yarn", "ha", "hosts"]
    assert [p.name for p in suite.PARTITIONS if p.in_tier("full")] == [*ci, "bench"]


def _xml_writer(tmp_path: Path, tests: int, skipped: int) -> list[str]:
    xml = tmp_path / "r.xml"
    body = (
        f'<testsuites><testsuite tests="{tests}" skipped="{skipped}" failures="0" errors="0"'
        ' time="1.5"/></testsuites>'
    )
    return [sys.executable, "-c", f"open({str(xml)!r}, 'w').write({body!r})"]


def test_a_partition_under_its_floor_fails_naming_the_floor(tmp_path):
    xml = tmp_path / "r.xml"
    ok, line = suite._run_one("p", _xml_writer(tmp_path, 5, 3), 60, 3, xml, tmp_path / "l")
    assert not ok
    assert "2 executed, 3 skipped" in line and "floor of 3" in line
    ok, line = suite._run_one("p", _xml_writer(tmp_path, 5, 2), 60, 3, xml, tmp_path / "l")
    assert ok, line


def test_a_partition_past_its_limit_is_killed_and_fails(tmp_path):
    argv = [sys.executable, "-c", "import time; time.sleep(30)"]
    ok, line = suite._run_one("p", argv, 1, 1, tmp_path / "r.xml", tmp_path / "l")
    assert not ok and "ran past its limit of 1 s" in line


def test_a_partition_that_wrote_no_results_fails(tmp_path):
    argv = [sys.executable, "-c", "pass"]
    ok, line = suite._run_one("p", argv, 60, 1, tmp_path / "r.xml", tmp_path / "l")
    assert not ok and "no JUnit XML" in line


def test_contributing_shows_the_path_map_as_the_code_has_it(capsys):
    assert suite.main(["areas", "--table"]) == 0
    table = capsys.readouterr().out.strip()
    assert table in (ROOT / "CONTRIBUTING.md").read_text()
