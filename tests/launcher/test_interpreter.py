"""The venv's base interpreter shipped with it (launcher/yarn/interpreter.py): which prefixes can
be, and this machine's own (pyenv's, a shared-library build) unpacked elsewhere with the packed
venv, assembled as a container does, running with nothing mapped from where it was built."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tony_jupyter.core import nodepython
from tony_jupyter.launcher.yarn import interpreter, packenv

BASE = Path(os.path.realpath(sys.base_prefix))


def test_a_system_prefix_or_one_holding_more_than_python_is_not_shipped(tmp_path):
    assert "system prefix" in (interpreter.not_relocatable(Path("/usr")) or "")
    fake = tmp_path / "py"
    (fake / "lib" / "python3.11").mkdir(parents=True)
    (fake / "lib" / "python3.11" / "os.py").write_text("")
    (fake / "bin").mkdir()
    assert "no CPython" in (interpreter.not_relocatable(fake) or "")
    for name in ("python3.11", "python3", "pip3.11", "idle3"):
        (fake / "bin" / name).write_text("")
    assert interpreter.not_relocatable(fake) is None
    (fake / "bin" / "aws").write_text("#!/bin/python3.11\n")  # a console script: fine
    assert interpreter.not_relocatable(fake) is None
    (fake / "lib" / "libssl.so.3").write_text("")
    assert "its lib/ holds lib/libssl.so.3" in (interpreter.not_relocatable(fake) or "")


def test_the_base_prefix_is_found_through_pyvenv_cfg(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert interpreter.base_prefix(venv) == BASE
    (venv / "pyvenv.cfg").write_text("home = /nowhere/bin\n")
    assert interpreter.base_prefix(venv) is None


def test_this_machines_interpreter_runs_unpacked_elsewhere_with_the_venv(tmp_path):
    assert interpreter.not_relocatable(BASE) is None, interpreter.not_relocatable(BASE)
    ver = interpreter.version(BASE)
    venv = tmp_path / "venv"
    python = str(BASE / "bin" / f"python{ver}")
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "mymod.py").write_text("WHERE = 'packed'\n")
    packenv.pack(venv, tmp_path / "env.tar.gz")
    unpacked_bytes = interpreter.pack(BASE, tmp_path / "py.tar")
    with tarfile.open(tmp_path / "py.tar") as tar:
        names = tar.getnames()
    std = f"lib/python{ver}/"
    assert not [n for n in names if n.startswith((std + "site-packages/", std + "test/"))]
    shipped = sorted(n for n in names if n.startswith("bin/"))
    assert f"bin/python{ver}" in shipped and "bin/python3" in shipped
    assert not [n for n in shipped if "config" in n or "gdb" in n or "pip" in n], shipped
    assert unpacked_bytes < 400 << 20
    cache, container = tmp_path / "filecache", tmp_path / "container"  # as a NodeManager has it
    for name, archive in (("env", "env.tar.gz"), (interpreter.NAME, "py.tar")):
        with tarfile.open(tmp_path / archive) as tar:
            tar.extractall(cache / name, filter="tar")
    container.mkdir()
    for name in ("env", interpreter.NAME):
        (container / name).symlink_to(cache / name)
    code = (
        "import sys, ssl, sqlite3, ctypes, json, mymod\n"
        "maps = {l.split()[-1] for l in open('/proc/self/maps') if '/' in l}\n"
        "print(sys.base_prefix, mymod.WHERE, *sorted(maps), sep='\\n')\n"
    )
    script = f'{nodepython.prelude(ver or "")} && {interpreter.PYTHON} -c "$CODE"'
    got = subprocess.run(
        ["bash", "-c", script],
        cwd=container,
        env={"PATH": "/usr/bin:/bin", "CODE": code},
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0, got.stderr
    base, where, *maps = got.stdout.splitlines()
    assert Path(os.path.realpath(base)) == cache / interpreter.NAME
    assert where == "packed"
    assert [m for m in maps if m.startswith(str(BASE))] == []
    assert [m for m in maps if m.startswith(str(cache / interpreter.NAME))]  # libpython, .so's


def test_the_container_command_assembles_the_venv_without_quotes_of_its_own():
    # YARN runs a container's command inside a double-quoted bash -c: none of its own
    cmd = nodepython.launch(nodepython.SHIPPED_PYTHON, "3.11", "run", "err")
    assert '"' not in cmd and "'" not in cmd
    assert cmd.startswith("echo ") and ". ./.tony-venv.sh && " in cmd
    assert nodepython.launch("/usr/bin/python3", "3.11", "run", "err") == nodepython.guarded(
        "/usr/bin/python3", "3.11", "run", "err"
    )
