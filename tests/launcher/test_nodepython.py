"""A container's command checks the job's Python before running it (core/nodepython.py):
each case runs the real command line in bash, as a YARN container does, with the interpreters a
node may have: none at the path, a venv link to a base interpreter the node lacks, another minor
version, one that does not start, and the right one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tony_jupyter.core import nodepython, venvdir

# The check names the host as `hostname -f` does (the node's name in YARN's node list).
HOST = subprocess.run(
    "hostname -f 2>/dev/null || hostname", shell=True, capture_output=True, text=True, check=True
).stdout.strip()


def run(python: str, want: str | None, tmp_path: Path) -> tuple[int, str, str]:
    err = tmp_path / "stderr"
    ran = tmp_path / "ran"
    command = f'{python} -c \'open("{ran}", "w").write("yes")\' 2>>{err}'
    line = nodepython.guarded(python, want, command, str(err))
    assert '"' not in line.split("&&")[0]  # the check itself survives a double-quoted bash -c
    res = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True)
    text = err.read_text() if err.exists() else ""
    return res.returncode, text, ran.read_text() if ran.exists() else ""


def test_the_right_python_runs_the_command(tmp_path):
    code, err, ran = run(sys.executable, nodepython.this_version(), tmp_path)
    assert (code, err, ran) == (0, "", "yes")


def test_no_interpreter_at_the_path_is_named_with_the_host_and_the_fix(tmp_path):
    code, err, ran = run("/opt/no-such/bin/python3", "3.11", tmp_path)
    assert code == nodepython.EXIT and ran == ""
    assert f"on host {HOST} " in err
    assert "/opt/no-such/bin/python3 cannot run: no such file" in err
    assert "--python PATH" in err and "--pack-env VENV" in err


def test_a_venv_whose_base_interpreter_is_missing_names_where_its_link_leads(tmp_path):
    (tmp_path / "env" / "bin").mkdir(parents=True)
    os.symlink("/opt/python-3.11.7/bin/python3.11", tmp_path / "env" / "bin" / "python")
    code, err, _ = run("env/bin/python", "3.11", tmp_path)
    assert code == nodepython.EXIT
    assert "env/bin/python cannot run" in err
    assert "a link to /opt/python-3.11.7/bin/python3.11, which this host does not have" in err


def test_another_minor_version_names_both(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 3.99\n")
    fake.chmod(0o755)
    code, err, ran = run(str(fake), "3.11", tmp_path)
    assert code == nodepython.EXIT and ran == ""
    assert "is Python 3.99; the job needs Python 3.11" in err


def test_an_interpreter_that_does_not_start_says_why(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\necho 'error while loading shared libraries: libpython3.11.so' >&2\nexit 127\n"
    )
    fake.chmod(0o755)
    code, err, _ = run(str(fake), "3.11", tmp_path)
    assert code == nodepython.EXIT
    assert "does not start: error while loading shared libraries: libpython3.11.so" in err


def test_with_no_wanted_version_any_that_runs_will_do(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    fake.chmod(0o755)
    code, err, ran = run(str(fake), None, tmp_path)
    assert (code, ran) == (0, "yes"), err


@pytest.mark.parametrize(
    "cfg, version",
    [
        ("home = /usr/bin\nversion = 3.11.7\n", "3.11"),  # python -m venv
        ("home = /usr/bin\nversion_info = 3.12.1.final.0\n", "3.12"),  # virtualenv
        ("home = /usr/bin\n", None),
    ],
)
def test_a_packed_venvs_version_comes_from_its_pyvenv_cfg(tmp_path, cfg, version):
    (tmp_path / "pyvenv.cfg").write_text(cfg)
    assert venvdir.venv_version(tmp_path) == version
