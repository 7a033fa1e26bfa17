"""The tony-jupyter command, as a real subprocess."""

import subprocess
import sys

from helpers.jobs import wait_no_processes


def cli(*args, check=True):
    r = subprocess.run(
        [sys.executable, "-m", "tony_jupyter.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert r.returncode == 0, r.stderr + r.stdout
    return r


def test_submit_list_status_logs(tony_home, tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import os, sys\nprint('task', os.environ['TASK_INDEX'], sys.argv[1:])\n")
    r = cli("submit", str(script), "--workers", "2", "--name", "clitest", "--", "--lr", "0.1")
    assert "SUCCEEDED" in r.stdout and "[worker:1] task 1 ['--lr', '0.1']" in r.stdout
    job_id = r.stdout.split("submitted ")[1].split()[0]
    listing = cli("list").stdout
    assert job_id in listing and "clitest" in listing and "SUCCEEDED" in listing
    assert "worker:1" in cli("status", job_id).stdout
    assert "task 0 ['--lr', '0.1']" in cli("logs", job_id, "worker:0").stdout
    assert wait_no_processes(tony_home) == []


def test_failing_script_exits_non_zero(tony_home, tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("raise RuntimeError('no data')\n")
    r = cli("submit", str(script), check=False)
    assert r.returncode == 1 and "FAILED" in r.stdout and "RuntimeError: no data" in r.stdout
    assert wait_no_processes(tony_home) == []


def test_errors_are_one_line(tony_home):
    r = cli("status", "nope", check=False)
    assert r.returncode != 0 and "error: no job 'nope'" in r.stderr
    r = cli("submit", "/nonexistent.py", check=False)
    assert r.returncode == 1 and "no such script" in r.stderr
    r = cli("submit", __file__, "--workers", "0", check=False)
    assert r.returncode == 2 and "at least one worker" in r.stderr


def test_devcluster_command_comes_from_the_devcluster_distribution():
    # tony_jupyter never imports the devcluster: the command is its entry point
    r = cli("devcluster", "--help")
    assert "usage: tony-jupyter devcluster" in r.stdout and "{up,down," in r.stdout


def test_devcluster_command_without_the_devcluster_says_how_to_install_it(monkeypatch, capsys):
    from tony_jupyter import cli as tony_cli

    monkeypatch.setattr(tony_cli, "entry_points", lambda **_: ())
    assert tony_cli.main(["devcluster", "up"]) == 2
    err = capsys.readouterr().err
    assert "`tony-jupyter devcluster` comes with tony-jupyter-devcluster" in err
    assert "pip install 'tony-jupyter[devcluster]'" in err and "bash dev/setup" in err
