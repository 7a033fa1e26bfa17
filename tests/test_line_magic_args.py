"""``%tony`` line magics expand ``$name`` and ``{expr}`` from the notebook, as IPython's line
magics do (``%tony kill {job_id}``); the ``%%tony`` cell's line is left as written."""

import pytest
from IPython.core.error import UsageError


def test_dollar_and_braces_are_expanded_from_the_notebook(shell, tony_home):
    shell.user_ns["job_id"] = "tony_missing_1"
    with pytest.raises(UsageError, match="no job 'tony_missing_1'"):
        shell.run_line_magic("tony", "status {job_id}")
    with pytest.raises(UsageError, match="no job 'tony_missing_1'"):
        shell.run_line_magic("tony", "status $job_id")
    with pytest.raises(UsageError, match="no job 'tony_missing_1-x'"):
        shell.run_line_magic("tony", "status {job_id + '-x'}")


def test_a_name_the_notebook_lacks_stays_as_written(shell, tony_home):
    with pytest.raises(UsageError, match=r"'\{not_defined_here\}' is not a job id"):
        shell.run_line_magic("tony", "status {not_defined_here}")


def test_script_arguments_reach_the_script_expanded(shell, tony_home, tmp_path):
    script = tmp_path / "show.py"
    script.write_text("import sys\nargs = sys.argv[1:]\n")
    shell.user_ns["wd"] = str(tmp_path / "work")
    shell.run_line_magic("tony", f"run {script} --pull args -- --working_dir $wd")
    assert shell.user_ns["args"] == ["--working_dir", str(tmp_path / "work")]
