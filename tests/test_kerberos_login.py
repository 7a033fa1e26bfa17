"""The notebook's Kerberos login refuses what it can tell is wrong before asking any KDC: a
keytab without a principal, a keytab that is not there, and missing GSSAPI bindings (the
secure devcluster's tests cover the cases that need a KDC)."""

from __future__ import annotations

import sys

import pytest

from tony_jupyter.core.errors import BackendError
from tony_jupyter.core.kerberos import ENV_KEYTAB, ENV_PRINCIPAL, Login


def test_a_keytab_needs_its_principal(tmp_path):
    keytab = tmp_path / "k.keytab"
    keytab.write_bytes(b"\x05\x02")
    with pytest.raises(BackendError, match="needs --principal too"):
        Login(None, str(keytab)).credentials()


def test_a_keytab_that_is_not_there(tmp_path):
    with pytest.raises(BackendError, match="no such file"):
        Login("alice@EXAMPLE.COM", str(tmp_path / "nope.keytab")).credentials()


def test_missing_gssapi_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)
    with pytest.raises(BackendError, match=r"pip install 'tony-jupyter\[kerberos\]'"):
        Login().credentials()


def test_flags_win_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_PRINCIPAL, "env@R")
    monkeypatch.setenv(ENV_KEYTAB, "~/env.keytab")
    assert Login.from_env().principal == "env@R"
    assert Login.from_env().keytab.endswith("/env.keytab")
    assert Login.from_env("flag@R", str(tmp_path / "f")).to_json() == {
        "principal": "flag@R",
        "keytab": str(tmp_path / "f"),
    }
