"""Whether a packed venv takes its base interpreter along (launcher/yarn/shipchoice.py):
--ship-python / tony.python.ship, the prefix's shape and the doctor's finding on a cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tony_jupyter.core.errors import SpecError
from tony_jupyter.launcher.yarn import interpreter, shipchoice
from tony_jupyter.options import parse_job_args

BASE = Path(os.path.realpath(sys.base_prefix))
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"
CLUSTER = "hdfs://nn:8020 http://rm:8088"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def venv(tmp_path):
    """A venv of this machine's (relocatable: pyenv's) base interpreter."""
    assert interpreter.not_relocatable(BASE) is None, interpreter.not_relocatable(BASE)
    v = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(v)], check=True)
    return v


def _system_venv(tmp_path) -> Path:
    """A venv whose pyvenv.cfg names /usr/bin, a system prefix (not run: only read)."""
    v = tmp_path / "sysvenv"
    v.mkdir()
    (v / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    return v


def test_auto_ships_a_prefix_of_one_cpython_until_the_doctor_finds_it_on_the_nodes(home, venv):
    assert shipchoice.decide("auto", venv, CLUSTER).prefix == BASE
    assert shipchoice.decide("auto", venv, None).prefix == BASE
    # the probe found another minor version at that path: shipped still
    shipchoice.remember(CLUSTER, BASE, shipchoice.Found(True, "3.6.15", "node1", time.time()))
    assert shipchoice.decide("auto", venv, CLUSTER).prefix == BASE
    shipchoice.remember(CLUSTER, BASE, shipchoice.Found(False, "", "node1", time.time()))
    assert shipchoice.decide("auto", venv, CLUSTER).prefix == BASE
    shipchoice.remember(CLUSTER, BASE, shipchoice.Found(True, f"{VERSION}.1", "node1", 0.0))
    got = shipchoice.decide("auto", venv, CLUSTER)
    assert got.prefix is None
    assert f"the doctor's probe found {BASE} (Python {VERSION}.1) on node1" in got.why
    # another cluster's finding says nothing of this one
    assert shipchoice.decide("auto", venv, "hdfs://other:8020 http://rm2:8088").prefix == BASE
    # always ships whatever the probe found; never ships nothing
    assert shipchoice.decide("always", venv, CLUSTER).prefix == BASE
    never = shipchoice.decide("never", venv, CLUSTER)
    assert never.prefix is None and f"the nodes are to have its Python at {BASE}" in never.why


def test_always_refuses_a_python_that_cannot_run_from_another_path(home, tmp_path):
    sysvenv = _system_venv(tmp_path)
    auto = shipchoice.decide("auto", sysvenv, CLUSTER)
    assert auto.prefix is None and "/usr is a system prefix" in auto.why
    with pytest.raises(SpecError) as e:
        shipchoice.decide("always", sysvenv, CLUSTER)
    msg = str(e.value)
    assert "--ship-python always: the venv's Python cannot run from another path" in msg
    assert "/usr is a system prefix" in msg and "--ship-python never" in msg
    assert "nothing was submitted" in msg
    # the doctor's probe did not find it on the nodes: said, with the fixes that work
    shipchoice.remember(CLUSTER, Path("/usr"), shipchoice.Found(False, "", "worker1", 0.0))
    auto = shipchoice.decide("auto", sysvenv, CLUSTER)
    assert auto.prefix is None and "the doctor's probe did not find it on worker1" in auto.why
    assert "the job's containers stop at their start" in auto.why and "--python PATH" in auto.why
    (sysvenv / "pyvenv.cfg").write_text("home = /nowhere/bin\n")
    with pytest.raises(SpecError, match="names no base interpreter that exists"):
        shipchoice.decide("always", sysvenv, CLUSTER)
    assert shipchoice.decide("auto", sysvenv, CLUSTER).prefix is None
    with pytest.raises(SpecError, match="expected one of auto, always, never"):
        shipchoice.decide("sometimes", sysvenv, CLUSTER)


def test_a_damaged_record_is_no_finding(home, venv):
    home.mkdir()
    (home / shipchoice.RECORD).write_text("{not json")
    assert shipchoice.found(CLUSTER, BASE) is None
    (home / shipchoice.RECORD).write_text(json.dumps({CLUSTER: {str(BASE): {"present": 1}}}))
    assert shipchoice.found(CLUSTER, BASE) is None
    assert shipchoice.decide("auto", venv, CLUSTER).prefix == BASE
    # a finding replaces the damaged file whole
    shipchoice.remember(CLUSTER, BASE, shipchoice.Found(True, "3.11.7", "n", 1.0))
    assert shipchoice.found(CLUSTER, BASE) == shipchoice.Found(True, "3.11.7", "n", 1.0)
    assert [p.name for p in home.iterdir()] == [shipchoice.RECORD]


def test_a_home_that_cannot_be_written_costs_the_finding_only(tmp_path, monkeypatch, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(blocked / "home"))
    shipchoice.remember(CLUSTER, BASE, shipchoice.Found(True, "3.11.7", "n", 1.0))
    assert "not kept" in capsys.readouterr().err
    assert shipchoice.found(CLUSTER, BASE) is None


def test_the_flag_and_the_key_set_the_choice_and_refuse_other_values():
    assert parse_job_args("")[1].ship_python == "auto"
    assert parse_job_args("--ship-python never")[1].ship_python == "never"
    assert parse_job_args("--conf tony.python.ship=always")[1].ship_python == "always"
    with pytest.raises(SpecError, match="tony.python.ship: expected one of auto, always, never"):
        parse_job_args("--conf tony.python.ship=yes")
    with pytest.raises(Exception, match="invalid choice: 'yes'"):
        parse_job_args("--ship-python yes")
