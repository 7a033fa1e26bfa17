"""The job's Python on nodes that are other hosts: with no --python and no --pack-env, a kernel
in a venv packs that venv when a NodeManager is not this host (launcher/yarn/packenv.py). Names
here are IP literals and localhost only: nothing is looked up on a network."""

from __future__ import annotations

import sys

import pytest

from tony_jupyter.launcher.yarn import packenv
from tony_jupyter.options import parse_job_args

OTHER = "198.18.0.5"  # a test-range address: on no interface of this machine


def spec(flags: str = ""):
    return parse_job_args(f"--backend yarn {flags}")[1]


@pytest.fixture
def in_a_venv(monkeypatch, tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    return venv


def test_nodes_on_another_host_get_the_kernels_venv(in_a_venv, capsys):
    got = packenv.by_default(spec(), ["localhost", OTHER])
    assert got.pack_env == str(in_a_venv.resolve())
    err = capsys.readouterr().err
    assert f"the nodes ({OTHER}) are other hosts" in err and "--python PATH" in err


def test_nodes_on_this_host_run_this_interpreter_as_before(in_a_venv, capsys):
    here = sorted(packenv.this_hosts_addresses())
    assert packenv.by_default(spec(), ["localhost", "127.0.0.1", *here]).pack_env == ""
    assert capsys.readouterr().err == ""


def test_a_named_python_or_pack_is_kept(in_a_venv, tmp_path):
    assert packenv.by_default(spec("--python /opt/py/bin/python"), [OTHER]).pack_env == ""
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert packenv.by_default(spec(f"--pack-env {other}"), [OTHER]).pack_env == str(other)


def test_a_kernel_outside_a_venv_packs_nothing(monkeypatch):
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)
    assert packenv.by_default(spec(), [OTHER]).pack_env == ""


def test_an_address_is_this_host_only_if_an_interface_has_it():
    here = packenv.this_hosts_addresses()
    assert packenv.is_this_host("127.0.0.1", here)
    assert packenv.is_this_host("localhost", here)
    assert not packenv.is_this_host(OTHER, here)
