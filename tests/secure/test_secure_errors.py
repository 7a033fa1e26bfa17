"""Bad input on a Kerberized cluster: each refused with a message that names the fix, and
nothing left behind (no application, no staging directory, no job record, no process)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tony_jupyter.core.errors import BackendError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter_devcluster import kerberos
from tony_jupyter_devcluster.security import principal

pytestmark = [pytest.mark.yarn, pytest.mark.secure]

CELL = "1 + 1\n"


def refused(shell, secure, line: str, *fragments: str) -> str:
    before = {a["id"] for a in secure.apps()}
    staged = set(secure.staging())
    with pytest.raises(BackendError) as err:
        shell.run_cell_magic("tony", f"--workers 1 --no-tensorboard {line}", CELL)
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, message
    assert not list_jobs(), "a job record was left"
    assert set(secure.staging()) <= staged, "a staging directory was left"
    live = [
        a
        for a in secure.apps()
        if a["id"] not in before and a["state"] not in ("FINISHED", "FAILED", "KILLED")
    ]
    assert not live, live
    return message


def test_no_ticket_says_run_kinit(shell, tony_home, secure, monkeypatch, tmp_path):
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket-here'}")
    refused(shell, secure, "", "no Kerberos ticket", "kinit", "--keytab")


def test_expired_ticket_says_kinit_again(
    shell, tony_home, secure, secure_cluster, monkeypatch, tmp_path
):
    layout = secure_cluster.layout
    ccache = tmp_path / "short-ticket"
    subprocess.run(
        [
            kerberos.tool("kinit"),
            "-l",
            "2s",
            "-kt",
            str(layout.keytab("alice")),
            "-c",
            f"FILE:{ccache}",
            principal("alice"),
        ],
        env={"KRB5_CONFIG": str(layout.krb5_conf), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{ccache}")
    time.sleep(3)
    refused(shell, secure, "", "expired", "kinit")


def test_keytab_that_does_not_exist(shell, tony_home, secure, tmp_path):
    missing = tmp_path / "alice.keytab"
    refused(
        shell,
        secure,
        f"--principal {principal('alice')} --keytab {missing}",
        "no such file",
        str(missing),
    )


def test_keytab_of_another_principal(shell, tony_home, secure, secure_cluster):
    bobs = secure_cluster.layout.keytab("bob")
    refused(
        shell,
        secure,
        f"--principal {principal('alice')} --keytab {bobs}",
        "holds no key for alice",
        "klist -kt",
    )


def test_a_keytab_logs_in_without_any_ticket(
    shell, tony_home, secure_cluster, monkeypatch, tmp_path
):
    """The positive side of the keytab cases: no ticket cache at all, --principal/--keytab."""
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'none'}")
    keytab = secure_cluster.layout.keytab("alice")
    got = shell.run_cell_magic(
        "tony",
        f"--workers 1 --no-tensorboard --principal {principal('alice')} --keytab {keytab}",
        "import os\nos.environ['USER']\n",
    )
    assert got == "alice"


def test_gssapi_missing_names_the_install(shell, tony_home, secure, monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)
    refused(shell, secure, "", "GSSAPI", "pip install 'tony-jupyter[kerberos]'")


def test_token_that_cannot_be_had_names_the_service(shell, tony_home, secure):
    refused(
        shell,
        secure,
        "--conf tony.other.namenodes=http://localhost:1",
        "could not get an HDFS delegation token",
        "localhost:1",
        "tony.other.namenodes",
    )


def test_queue_alice_may_not_submit_to(shell, tony_home, secure):
    refused(shell, secure, "--queue gpu", "YARN refused the job in queue", "--queue NAME")
