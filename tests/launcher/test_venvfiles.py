"""What a packed venv leaves out (launcher/yarn/venvfiles.py): hidden files and files that may
hold credentials, named once; a package's own files stay; a ``!`` line brings one back."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tony_jupyter.launcher.yarn import packenv, venvfiles

SECRETS = (
    "pip.conf", ".netrc", ".pypirc", ".env", ".env.prod", ".git-credentials",
    "secrets/key.pem", "secrets/tls.key", "etc/jupyter/jupyter_server_config.json",
    ".config/gcloud/application_default_credentials.json", "share/credentials.json",
)  # fmt: skip
OWN = ("certifi/cacert.pem", "certifi/__init__.py", "mypkg/.libs/libx.so", "mypkg/test.key")


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    for rel in SECRETS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("password=hunter2\n")
    (root / ".gitignore").write_text("*\n")  # virtualenv's and uv's marker
    (root / "etc" / "jupyter" / "nbconfig").mkdir()
    (root / "share" / "jupyter").mkdir(parents=True)
    (root / "share" / "jupyter" / "kernel.json").write_text("{}")
    for rel in OWN:
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("data\n")
    (site / "stray.pem").write_text("no package's\n")
    dist = site / "certifi-1.0.dist-info"
    dist.mkdir()
    (dist / "RECORD").write_text(
        "".join(f"{r},sha256=x,5\n" for r in OWN) + f"{dist.name}/RECORD,,\n"
    )
    return root


def test_hidden_and_credential_files_are_left_out_but_not_a_packages_own(venv):
    got = venvfiles.left_out(venv)
    site = next(venv.glob("lib/python3*/site-packages")).relative_to(venv).as_posix()
    expected = {
        "pip.conf", ".netrc", ".pypirc", ".env", ".env.prod", ".git-credentials",
        "secrets/key.pem", "secrets/tls.key", "etc/jupyter/", ".config/",
        "share/credentials.json", f"{site}/stray.pem",
    }  # fmt: skip
    assert set(got.names) == expected
    for rel in OWN:
        assert not got.covers(f"{site}/{rel}")
    assert got.covers("etc/jupyter/jupyter_server_config.json")
    assert not got.covers("share/jupyter/kernel.json") and not got.covers(".gitignore")


def test_a_tonyignore_line_brings_one_back_or_leaves_out_more(venv):
    (venv / ".tonyignore").write_text("!secrets/key.pem\nshare/jupyter/\n")
    got = venvfiles.left_out(venv)
    assert "secrets/key.pem" not in got.names and "secrets/tls.key" in got.names
    assert "share/jupyter/" in got.names


def test_the_archive_holds_no_file_the_rules_name_and_says_which_once(venv, tmp_path, capsys):
    out = tmp_path / "env.tar.gz"
    packenv.pack(venv, out)
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
    for rel in SECRETS:
        assert rel not in names, rel
    assert not [n for n in names if n.startswith(("etc/jupyter", ".config"))], names
    assert not [n for n in names if n.endswith("stray.pem")], names
    site = next(venv.glob("lib/python3*/site-packages")).relative_to(venv).as_posix()
    assert {f"{site}/{rel}" for rel in OWN} <= names
    assert "share/jupyter/kernel.json" in names
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if "not packed from the venv" in line]
    assert len(notices) == 1, err
    assert "(hidden, or may hold credentials); pack one with a '!NAME' line in" in notices[0]
    assert str(venv / ".tonyignore") in notices[0]
    assert ".env" in notices[0] and "and 7 more" in notices[0]


def test_a_clean_venv_packs_without_a_word(tmp_path, capsys):
    root = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    packenv.pack(root, tmp_path / "env.tar.gz")
    assert venvfiles.left_out(root).names == ()
    assert "not packed" not in capsys.readouterr().err


def test_a_brought_back_file_changes_the_hash(venv):
    first = packenv.content_hash(venv)
    (venv / ".tonyignore").write_text("!pip.conf\n")
    assert packenv.content_hash(venv) != first
