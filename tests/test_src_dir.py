"""The directory shipped with a job (tony_jupyter/srcdir.py): `%tony run` ships the script's
directory and `%%tony` cells the notebook's, content-addressed, laid out as under the notebook's
working directory; junk is skipped and a huge directory is refused before anything starts."""

import os
from pathlib import Path

import pytest
from helpers.jobs import wait_no_processes
from IPython.core.error import UsageError

from tony_jupyter import srcdir
from tony_jupyter.errors import SpecError
from tony_jupyter.executor.frameworks import tony_env

RUN = "--workers 1 --no-tensorboard"
SEEN = "import os, sys\nseen = (os.getcwd(), sys.path[0], open('data/rows.txt').read())\n"


def test_a_cell_imports_a_module_beside_the_notebook(shell, tony_home):
    (tony_home.parent / "notebook" / "mnist_setup.py").write_text("BATCH = 64\n")
    shell.run_cell_magic("tony", f"{RUN} --pull got", "import mnist_setup\ngot = mnist_setup.BATCH")
    assert shell.user_ns["got"] == 64
    assert wait_no_processes(tony_home) == []


def test_a_script_beside_the_notebook_runs_in_the_shipped_copy(shell, tony_home):
    notebook = tony_home.parent / "notebook"
    (notebook / "data").mkdir()
    (notebook / "data" / "rows.txt").write_text("1,2,3")
    (notebook / "main.py").write_text(SEEN)
    shell.run_line_magic("tony", f"run main.py {RUN} --pull seen")
    cwd, path0, rows = shell.user_ns["seen"]
    assert rows == "1,2,3"  # a path relative to the notebook's directory reads the same file
    assert cwd == path0 != str(notebook) and cwd.startswith(str(tony_home))
    (notebook / "main.py").write_text("raise SystemExit('edited')")
    assert Path(cwd, "main.py").read_text() == SEEN  # a snapshot, not the original


def test_a_script_in_a_subdirectory_keeps_its_place_under_the_notebook(shell, tony_home):
    scripts = tony_home.parent / "notebook" / "scripts"
    (scripts / "data").mkdir(parents=True)
    (scripts / "data" / "rows.txt").write_text("4,5")
    (scripts / "helper.py").write_text("X = 'helped'\n")
    (scripts / "train.py").write_text(
        "import os, sys, helper\n"
        "seen = (os.getcwd(), sys.path[0], open('scripts/data/rows.txt').read(), helper.X)\n"
    )
    shell.run_line_magic("tony", f"run scripts/train.py {RUN} --pull seen")
    cwd, path0, rows, helped = shell.user_ns["seen"]
    # As `python scripts/train.py` from the notebook's directory: the working directory is
    # (the copy of) the notebook's, the script's own directory is first on sys.path.
    assert (rows, helped) == ("4,5", "helped")
    assert path0 == os.path.join(cwd, "scripts")


def test_junk_is_not_shipped(shell, tony_home):
    notebook = tony_home.parent / "notebook"
    for junk in (".git", "__pycache__", ".ipynb_checkpoints", "venv"):
        (notebook / junk).mkdir()
        (notebook / junk / "x").write_text("junk")
    (notebook / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (notebook / "kept.txt").write_text("kept")
    shell.run_cell_magic("tony", f"{RUN} --pull names", "import os\nnames = sorted(os.listdir())")
    assert shell.user_ns["names"] == ["kept.txt"]


def test_a_huge_directory_is_refused_before_anything_starts(shell, tony_home):
    notebook = tony_home.parent / "notebook"
    for i in range(srcdir.MAX_BYTES // srcdir.MAX_FILE_BYTES + 1):  # none left out for its size
        with open(notebook / f"part{i}.bin", "wb") as f:  # sparse: it costs no disk
            f.truncate(srcdir.MAX_FILE_BYTES)
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", RUN, "x = 1")
    msg = str(e.value)
    assert str(notebook) in msg and "100 MB" in msg
    assert "--src-dir DIR" in msg and "--no-src-dir" in msg
    assert not (tony_home / "jobs").exists() or list((tony_home / "jobs").iterdir()) == []
    # the fix named works: nothing shipped, the cell runs
    shell.run_cell_magic("tony", f"{RUN} --no-src-dir --pull x", "x = 1")
    assert shell.user_ns["x"] == 1


def test_src_dir_flags_that_contradict_or_do_not_exist_are_refused(shell, tony_home, tmp_path):
    with pytest.raises(UsageError, match="no such directory"):
        shell.run_cell_magic("tony", f"{RUN} --src-dir {tmp_path / 'nope'}", "x = 1")
    with pytest.raises(UsageError, match="contradict"):
        shell.run_cell_magic("tony", f"{RUN} --src-dir {tmp_path} --no-src-dir", "x = 1")
    assert not (tony_home / "jobs").exists() or list((tony_home / "jobs").iterdir()) == []


def test_the_hash_follows_the_content(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.py").write_text("A = 1\n")
    first = srcdir.collect(d, cwd=tmp_path)
    assert first.rel == "d" and [f.name for f in first.files] == ["d/a.py"]
    (d / "__pycache__").mkdir()
    (d / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    assert srcdir.collect(d, cwd=tmp_path).digest == first.digest
    (d / "a.py").write_text("A = 2\n")
    assert srcdir.collect(d, cwd=tmp_path).digest != first.digest
    assert srcdir.collect(d, cwd=d).rel == ""  # the notebook's own directory
    assert srcdir.collect(d, cwd=tmp_path / "elsewhere").rel == ""  # outside it


def test_too_many_files_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(srcdir, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x")
    with pytest.raises(SpecError, match="more than 3 files"):
        srcdir.collect(tmp_path)


def test_tonys_task_environment():
    spec = {"worker": ["h:1", "h:2"], "ps": ["h:3"], "evaluator": ["h:4"]}
    env = tony_env("worker:1", spec)
    assert (env["JOB_NAME"], env["TASK_INDEX"], env["TASK_NUM"]) == ("worker", "1", "2")
    assert (env["IS_CHIEF"], env["DISTRIBUTED_MODE"]) == ("false", "GANG")
    assert tony_env("worker:0", spec)["IS_CHIEF"] == "true"
    with_chief = {"chief": ["h:0"], **spec}
    assert tony_env("worker:0", with_chief)["IS_CHIEF"] == "false"
    assert tony_env("chief:0", with_chief)["IS_CHIEF"] == "true"


def test_the_chief_gets_a_tensorboard_port(shell, tony_home):
    shell.run_cell_magic(
        "tony",
        "--workers 2 --no-tensorboard --pull env",
        "import os\nenv = {k: os.environ.get(k) for k in ('TB_PORT', 'IS_CHIEF', 'JOB_NAME')}",
    )
    env = shell.user_ns["env"]
    assert int(env["TB_PORT"]) > 0 and env["IS_CHIEF"] == "true" and env["JOB_NAME"] == "worker"
