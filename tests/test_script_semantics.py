"""`%tony run script.py` shows the script what `python script.py` would: it is __main__ (TF1's
tf.compat.v1.app.run() finds its main there), its __file__ and its directory on sys.path (a
module beside it imports), and its atexit handlers run at a normal exit (multiprocessing's
/tmp/pymp-* directories are removed)."""

import os
import textwrap

from helpers.jobs import wait_no_processes

RUN = "--workers 1 --no-tensorboard"


def run_script(shell, path, text, args=""):
    path.write_text(textwrap.dedent(text))
    shell.run_line_magic("tony", f"run {path} {RUN}" + (f" -- {args}" if args else ""))


def test_tf1_app_run_finds_main_in_the_script(shell, tony_home, tmp_path):
    mark = tmp_path / "main-ran"
    run_script(
        shell,
        tmp_path / "mnist_distributed.py",
        f"""
        import sys
        import tensorflow as tf

        def main(argv):
            with open({str(mark)!r}, "w") as f:
                f.write(" ".join(argv[1:]))

        if __name__ == "__main__":
            tf.compat.v1.app.run()
        """,
        args="--steps 3",
    )
    assert mark.read_text() == "--steps 3"
    assert wait_no_processes(tony_home) == []


def test_file_and_the_scripts_directory_are_what_python_gives(shell, tony_home, tmp_path):
    (tmp_path / "mnist_setup.py").write_text("BATCH = 64\n")
    script = tmp_path / "main.py"
    script.write_text(
        "import os, sys\n"
        "import mnist_setup\n"
        "here = (__file__, sys.path[0], mnist_setup.BATCH, __name__, os.getcwd())\n"
    )
    shell.run_line_magic("tony", f"run {script} {RUN} --pull here")
    file, path0, batch, name, cwd = shell.user_ns["here"]
    assert (batch, name) == (64, "__main__")
    # The script's directory was shipped: the task runs the job's copy of it, not the original.
    assert path0 != str(tmp_path) and path0.startswith(str(tony_home))
    assert file == os.path.join(path0, "main.py") and os.path.exists(file)
    assert cwd == path0  # outside the notebook's directory: the task runs in its copy


def test_atexit_runs_and_multiprocessing_leaves_no_temp_dir(shell, tony_home, tmp_path):
    mark, where = tmp_path / "atexit-ran", tmp_path / "pymp-dir"
    run_script(
        shell,
        tmp_path / "ctl.py",
        f"""
        import atexit, multiprocessing.util
        atexit.register(lambda: open({str(mark)!r}, "w").write("yes"))
        with open({str(where)!r}, "w") as f:
            f.write(multiprocessing.util.get_temp_dir())
        """,
    )
    assert mark.read_text() == "yes"
    pymp = where.read_text()
    assert os.path.basename(pymp).startswith("pymp-") and not os.path.exists(pymp)
    assert wait_no_processes(tony_home) == []
