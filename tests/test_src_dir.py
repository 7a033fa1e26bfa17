"""The directory shipped with a job (tony_jupyter/core/srcdir.py): `%tony run` ships the script's
directory and `%%tony` cells the notebook's, content-addressed, laid out as under the notebook's
working directory; junk is skipped and a huge directory is refused before anything starts."""

import os
from pathlib import Path

import pytest
from helpers.jobs import wait_no_processes
from IPython.core.error import UsageError

from tony_jupyter.core import srcdir
from tony_jupyter.core.errors import SpecError
from tony_jupyter.executor.frameworkenv import tony_env

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


LIST = (
    "import os\n"
    "names = sorted(os.path.relpath(os.path.join(d, n)) for d, _, ns in os.walk('.') for n in ns)\n"
    "inner = open('inner').read()\n"
)


def odd_directory(notebook: Path, outside: Path) -> None:
    """A notebook's directory with everything that must not be shipped as it is."""
    (notebook / "mod.py").write_text("X = 1\n")
    (notebook / "inner").symlink_to(notebook / "mod.py")  # absolute, but inside: a copy of it
    outside.mkdir()
    (outside / "notes").write_text("PRIVATE KEY")
    (notebook / "notes").symlink_to(outside / "notes")
    (notebook / "outdir").symlink_to(outside)
    (notebook / "passwd").symlink_to("/etc/passwd")
    (notebook / "environ").symlink_to("/proc/self/environ")
    (notebook / "pagemap").symlink_to("/proc/self/pagemap")
    os.mkfifo(notebook / "fifo")
    fd = os.open(os.path.join(os.fsencode(notebook), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY)
    os.close(fd)


def test_links_out_pseudo_and_special_files_and_odd_names_are_left_out_with_one_notice(
    backend, shell, tony_home, capsys
):
    notebook = tony_home.parent / "notebook"
    odd_directory(notebook, tony_home.parent / "outside")
    shell.run_cell_magic("tony", f"{RUN} --pull names,inner", LIST)
    assert shell.user_ns["names"] == ["inner", "mod.py"]
    assert shell.user_ns["inner"] == "X = 1\n"
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if "not shipped from" in line]
    assert len(notices) == 1, err
    for said in (  # the first three of each kind, by name
        "environ (/proc/self/environ), notes (" + str(tony_home.parent / "outside" / "notes"),
        "outdir (" + str(tony_home.parent / "outside") + ") and 2 more: links out",
        "--src-follow-links",
        "fifo: not regular files",
        "caf\\xe9.txt: names that are not UTF-8",
    ):
        assert said in notices[0]
    assert "Traceback" not in err
    shell.run_cell_magic("tony", f"{RUN} --pull names,inner", LIST)
    assert "not shipped from" not in capsys.readouterr().err  # said once
    if backend == "local":  # the job's copy, kept in its history, holds none of them either
        for d in (tony_home / "jobs").iterdir():
            assert sorted(p.name for p in (d / "src").iterdir()) == ["inner", "mod.py"]


@pytest.mark.usefixtures("backend")
def test_follow_links_ships_what_links_point_at_but_never_pseudo_files(shell, tony_home, capsys):
    notebook = tony_home.parent / "notebook"
    odd_directory(notebook, tony_home.parent / "outside")
    cell = LIST + "key = open('notes').read()\n"
    shell.run_cell_magic("tony", f"{RUN} --src-follow-links --pull names,key", cell)
    assert shell.user_ns["key"] == "PRIVATE KEY"
    assert "environ" not in shell.user_ns["names"] and "pagemap" not in shell.user_ns["names"]
    assert {"notes", "outdir/notes", "passwd"} <= set(shell.user_ns["names"])
    err = capsys.readouterr().err
    assert "environ (/proc/" in err and "pagemap (/proc/" in err and "pseudo-files" in err
    assert "Traceback" not in err


TONY_STYLE = """\
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--model_dir")
args = p.parse_args()
os.makedirs(args.model_dir, exist_ok=True)
with open(os.path.join(args.model_dir, "model.ckpt.data"), "wb") as f:
    f.truncate({size})  # the model, written beside the script
with open(os.path.join(args.model_dir, "checkpoint"), "w") as f:
    f.write("model.ckpt")
"""


@pytest.mark.usefixtures("backend")
def test_a_tony_style_script_that_writes_its_model_beside_itself_runs_twice(
    shell, tony_home, capsys
):
    notebook = tony_home.parent / "notebook"
    (notebook / "train.py").write_text(TONY_STYLE.format(size=srcdir.MAX_BYTES + 1))
    run = f"run train.py {RUN} -- --model_dir {notebook / 'model'}"
    shell.run_line_magic("tony", run)
    assert (notebook / "model" / "model.ckpt.data").stat().st_size > srcdir.MAX_BYTES
    capsys.readouterr()
    shell.run_line_magic("tony", run)  # was: "holds more than 100 MB", refused
    err = capsys.readouterr().err
    assert "model/model.ckpt.data (100 MB): over 10 MB each" in err
    assert "'!NAME' line in .tonyignore" in err


def test_ignore_files_and_large_files(tmp_path):
    (tmp_path / ".git").mkdir()  # a git work tree: its top's .gitignore counts too
    (tmp_path / ".gitignore").write_text("*.log\n")
    d = tmp_path / "notebooks"
    (d / "data").mkdir(parents=True)
    (d / "sub").mkdir()
    (d / ".gitignore").write_text("*.h5\ndata/\n")
    (d / ".tonyignore").write_text("!keep.h5\n!big/asked.bin\n!.config.json\n")
    (d / ".config.json").write_text("{}")  # hidden: left out by default, brought back
    (d / "sub" / ".gitignore").write_text("local.cfg\n")
    for name in ("a.py", "model.h5", "keep.h5", "data/x.csv", "sub/local.cfg", "sub/b.py", "r.log"):
        (d / name).write_text(name)
    (d / "big").mkdir()
    for name in ("asked.bin", "large.bin"):
        with open(d / "big" / name, "wb") as f:
            f.truncate(srcdir.MAX_FILE_BYTES + 1)
    src = srcdir.collect(d, cwd=d)
    assert [f.name for f in src.files] == [
        ".config.json", "a.py", "big/asked.bin", "keep.h5", "sub/b.py"
    ]  # fmt: skip
    assert src.size == srcdir.MAX_FILE_BYTES + 1 + len("{}a.py") + len("keep.h5") + len("sub/b.py")
    assert src.left_out == ((srcdir.LARGE, "big/large.bin", "10 MB"),)


def test_sizes_are_counted_as_read(tmp_path, monkeypatch):
    # /proc/self/pagemap says 0 bytes and yields gigabytes; let it past the pseudo-file rule
    monkeypatch.setattr(srcdir, "_pseudo_devices", frozenset)
    monkeypatch.setattr(srcdir, "MAX_FILE_BYTES", 1 << 20)
    (tmp_path / "pm").symlink_to("/proc/self/pagemap")
    src = srcdir.collect(tmp_path, follow_links=True)
    assert src.files == () and src.left_out == ((srcdir.LARGE, "pm", "more than 1 MB read"),)
    (tmp_path / ".tonyignore").write_text("!pm\n")  # asked for: it counts against the bound
    monkeypatch.setattr(srcdir, "MAX_BYTES", 2 << 20)
    with pytest.raises(SpecError, match="more than 2 MB"):
        srcdir.collect(tmp_path, follow_links=True)


def test_the_archive_holds_regular_files_only(tmp_path):
    import io
    import tarfile

    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "abs").symlink_to(tmp_path / "a.py")
    (tmp_path / "rel").symlink_to("a.py")
    (tmp_path / "out").symlink_to("/etc/hostname")
    src = srcdir.collect(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(srcdir.archive(src))) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == ["a.py", "abs", "rel"]
        assert all(m.isreg() and m.uid == 0 and m.mtime == 0 for m in members.values())
        assert tar.extractfile("abs").read() == b"A = 1\n"  # type: ignore[union-attr]


def test_a_file_changed_after_it_was_hashed_is_not_shipped_unseen(tmp_path):
    (tmp_path / "a.py").write_text("A = 1\n")
    src = srcdir.collect(tmp_path)
    (tmp_path / "a.py").write_text("A = 2\n")
    with pytest.raises(SpecError, match="changed while the job was being submitted"):
        srcdir.archive(src)
    with pytest.raises(SpecError, match="changed while the job was being submitted"):
        srcdir.copy_into(src, tmp_path / "copy")


def test_a_pseudo_filesystem_or_contradicting_flags_are_refused(shell, tony_home):
    with pytest.raises(UsageError, match="pseudo filesystem"):
        shell.run_cell_magic("tony", f"{RUN} --src-dir /proc/self", "x = 1")
    with pytest.raises(UsageError, match="contradict"):
        shell.run_cell_magic("tony", f"{RUN} --src-follow-links --no-src-dir", "x = 1")
    assert not (tony_home / "jobs").exists() or list((tony_home / "jobs").iterdir()) == []


def test_links_to_directories_inside_are_walked_once_and_never_back_up(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text("M = 1\n")
    (tmp_path / "alias").symlink_to("sub")  # a directory link inside: its files, under its name
    (tmp_path / "sub" / "up").symlink_to("..")  # back up the tree: not walked again
    (tmp_path / "sub" / "self").symlink_to(tmp_path / "sub")
    src = srcdir.collect(tmp_path)
    assert [f.name for f in src.files] == ["alias/m.py", "sub/m.py"]
    assert src.left_out == ()


def test_a_directory_git_ignores_is_shipped_when_asked_for(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("scratch/\n*.log\n")
    d = tmp_path / "scratch" / "exp"
    d.mkdir(parents=True)
    (d / "train.py").write_text("x = 1\n")
    (d / "run.log").write_text("log")
    # --src-dir scratch/exp: git's rules would leave out everything; the user asked for it
    assert [f.name for f in srcdir.collect(d).files] == ["run.log", "train.py"]
    (tmp_path / ".gitignore").write_text("*.log\n")  # rules that leave it in still apply
    assert [f.name for f in srcdir.collect(d).files] == ["train.py"]


def test_files_that_may_hold_credentials_are_left_out_named_and_can_be_asked_for(tmp_path):
    secrets = (
        ".env", ".env.local", ".netrc", ".pypirc", "pip.conf", ".git-credentials",
        "certs/server.pem", "certs/server.key", "conf/credentials.json",
    )  # fmt: skip
    for name in (*secrets, "train.py", ".hidden_notes", "etc/jupyter/jupyter_server_config.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text("[default]\n")
    src = srcdir.collect(tmp_path)
    assert [f.name for f in src.files] == ["train.py"]
    said = sorted(n for why, n, _ in src.left_out if why == srcdir.SECRET)
    # the shipped directory's own etc/jupyter is Jupyter's settings of the venv it holds
    assert said == sorted([*secrets, ".aws/", "etc/jupyter/"])  # hidden notes: left out unsaid
    assert "may hold credentials; ship one with a '!NAME' line in .tonyignore" in src.notice
    assert src.notice.count("tony-jupyter: not shipped from") == 1
    (tmp_path / ".tonyignore").write_text("!certs/server.pem\n")
    src = srcdir.collect(tmp_path)
    assert [f.name for f in src.files] == ["certs/server.pem", "train.py"]
    assert "certs/server.pem" not in [n for _, n, _ in src.left_out]
