"""The notebook's TONY_CA_BUNDLE goes with a YARN job, so that its tasks verify the cluster's
HTTPS as the notebook does; a bundle that cannot be read is named before anything is made."""

from __future__ import annotations

import pytest

from tony_jupyter.core import jobdir, tokens
from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.yarn import transport
from tony_jupyter.launcher.yarn.appmaster import executor_file


def test_the_bundle_is_shipped_to_the_executors_when_tony_ca_bundle_names_one(
    tmp_path, monkeypatch
):
    pem = tmp_path / "ca.pem"
    pem.write_bytes(b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("TONY_CA_BUNDLE", str(pem))
    assert transport.shipped_ca_bundle(jobdir.CA_BUNDLE) == {jobdir.CA_BUNDLE: pem.read_bytes()}
    assert executor_file(jobdir.CA_BUNDLE)
    monkeypatch.delenv("TONY_CA_BUNDLE")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pem))  # the system's choice: the nodes' own
    assert transport.shipped_ca_bundle(jobdir.CA_BUNDLE) == {}


def test_an_unreadable_bundle_is_named_before_any_call(tmp_path, monkeypatch):
    monkeypatch.setenv("TONY_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(BackendError, match="cannot read TONY_CA_BUNDLE=.*missing.pem"):
        transport.session()
    with pytest.raises(BackendError, match="cannot read TONY_CA_BUNDLE=.*missing.pem"):
        transport.shipped_ca_bundle(jobdir.CA_BUNDLE)


def test_a_task_prefers_the_shipped_bundle(tmp_path, monkeypatch):
    monkeypatch.setenv("TONY_BUNDLE_DIR", str(tmp_path))
    monkeypatch.setenv("TONY_CA_BUNDLE", "/the/nodemanagers/ca.pem")
    assert tokens.ca_bundle() == "/the/nodemanagers/ca.pem"  # nothing shipped
    (tmp_path / jobdir.CA_BUNDLE).write_text("pem")
    assert tokens.ca_bundle() == str(tmp_path / jobdir.CA_BUNDLE)
