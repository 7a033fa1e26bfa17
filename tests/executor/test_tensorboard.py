"""TensorBoard beside the chief: it starts, registers with the AM, shows scalars while training
runs, ends with the chief; --no-tensorboard turns it off; its failure never fails the job.
The tests that use ``backend`` run on the local backend and on YARN."""

import os
import subprocess
import sys
import time

import psutil
import pytest
import requests
from helpers.cells import MWMS_MODEL
from helpers.jobs import submit, tensorboard_processes, wait_for, wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter.executor import tensorboard as tb
from tony_jupyter.executor.tensorboard_guard import GuardConfig
from tony_jupyter.launcher.client import JobClient
from tony_jupyter.options import parse_job_args

# Trains for a while (the test reads the scalars while it runs), then waits to be killed.
TRAIN = (
    """
import time
import tensorflow as tf
import tony_jupyter
"""
    + MWMS_MODEL
    + """model.fit(dataset, epochs=3, steps_per_epoch=20, verbose=0,
          callbacks=[tony_jupyter.progress()])
print("trained", flush=True)
time.sleep(600)
"""
)


def key_header(client: JobClient) -> dict:
    """What the Jupyter server's proxy sends TensorBoard: its key, from the AM."""
    return {"Authorization": f"Bearer {client.endpoint('tensorboard').key}"}


def guard_env(**kw) -> dict:
    config = GuardConfig(key="k" * 43, path_key="p" * 32, owner="alice", **kw)
    return {**os.environ, **config.to_env()}


def stop(client: JobClient, home) -> None:
    client.kill()
    client.release()
    assert client.wait_am_exit()
    assert wait_no_processes(home) == []


@pytest.mark.slow
def test_chief_tensorboard_shows_scalars_while_training(tony_home):
    X, y = load_digits(return_X_y=True)
    client = submit("--workers 2", TRAIN, {"X": (X / 16.0).astype("float32"), "y": y})
    try:
        url = wait_for(lambda: client.snapshot().endpoints.get("tensorboard"), 120, "the endpoint")
        assert url.startswith("http://127.0.0.1:")
        auth = key_header(client)
        wait_for(
            lambda: (
                requests.get(url + "data/plugin/scalars/tags", headers=auth, timeout=5)
                .json()
                .get("train")
            ),
            120,
            "scalars",
        )
        assert client.snapshot().state == "RUNNING"  # live, not after the fact
        # Both kinds: each comes when its step does (batch_loss every 10 steps, epoch_loss at
        # an epoch's end), and TensorBoard reads them as they come.
        wait_for(
            lambda: (
                {"epoch_loss", "batch_loss"}
                <= set(
                    requests.get(url + "data/plugin/scalars/tags", headers=auth, timeout=5).json()[
                        "train"
                    ]
                )
            ),
            120,
            "epoch and batch scalars",
        )
        points = requests.get(
            url + "data/plugin/scalars/scalars",
            params={"run": "train", "tag": "epoch_loss"},
            headers=auth,
            timeout=5,
        ).json()
        assert [p[1] for p in points][:1] == [1]
        log, _ = client.logs("worker:0")
        assert "[tony] TensorBoard at " + url in log
        assert "TensorBoard" not in client.logs("worker:1")[0]  # the chief's only
    finally:
        stop(client, tony_home)
    with pytest.raises(requests.ConnectionError):  # it died with its task
        requests.get(url, timeout=2)


# Waits for the test's go-ahead (a file: local and devcluster tasks share this machine's disk),
# so the job ends by itself with its TensorBoard up.
WAIT_FOR_GO = """
import os, time
while not os.path.exists(go):
    time.sleep(0.1)
print("done", flush=True)
"""


@pytest.mark.usefixtures("backend")
def test_tensorboard_ends_with_the_chief(tony_home, tmp_path):
    go = tmp_path / "go"
    client = submit("--workers 1", WAIT_FOR_GO, {"go": str(go)})
    try:
        url = wait_for(lambda: client.snapshot().endpoints.get("tensorboard"), 180, "the endpoint")
        assert requests.get(url + "data/runs", headers=key_header(client), timeout=5).json() == []
        assert requests.get(url + "data/runs", timeout=5).status_code == 403  # its guard
        assert tensorboard_processes(client.job_id)  # the check below sees it while it runs
        go.touch()
        wait_for(lambda: client.snapshot().terminal, 120, "the job's end")
        assert client.snapshot().state == "SUCCEEDED"
    finally:
        stop(client, tony_home)
    deadline = time.monotonic() + 15
    while (left := tensorboard_processes(client.job_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=2)


def test_no_tensorboard_flag_starts_none(tony_home):
    _, spec = parse_job_args("--workers 1 --no-tensorboard")
    assert spec.tensorboard is False
    client = submit("--workers 1 --no-tensorboard", "import time\ntime.sleep(3)", {})
    try:
        wait_for(lambda: client.snapshot().state == "SUCCEEDED", 60, "the job")
        assert client.snapshot().endpoints == {}
        assert "TensorBoard" not in client.logs("worker:0")[0]
    finally:
        stop(client, tony_home)


def test_tensorboard_that_cannot_start_is_one_log_line(tony_home, monkeypatch):
    monkeypatch.chdir(tony_home.parent)  # its tensorboard.log goes to the task's directory
    broken = [sys.executable, "-c", "import sys; sys.exit(3)"]
    monkeypatch.setattr(tb, "command", lambda *a: broken)
    said = []
    assert tb.run(object(), {"TONY_TENSORBOARD_DIR": str(tony_home / "tb")}, said.append) is None
    assert len(said) == 1 and "did not answer" in said[0]


def test_tensorboard_without_tensorflow_starts_fast(tmp_path):
    """The launcher blocks TensorFlow's import: TensorBoard's stub is enough to serve scalars."""
    port = tb.free_port()
    cmd = tb.command(str(tmp_path), "127.0.0.1", port)
    began = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=guard_env()
    )
    try:
        assert tb.wait_ready(proc, f"http://127.0.0.1:{port}/", "k" * 43, timeout=60)
        assert time.monotonic() - began < 30
        assert "tensorflow" not in subprocess.run(
            ["cat", f"/proc/{proc.pid}/maps"], capture_output=True, text=True
        ).stdout.lower().replace("tensorflow_stub", "")
    finally:
        proc.kill()
        proc.wait()


def test_a_real_tensorboard_serves_only_through_its_guard(tmp_path):
    """TensorBoard itself, behind the guard, as a secure cluster's node runs it: a plain GET
    on its port and a stranger through the RM's proxy get 403, the key and the owner get in."""
    port = tb.free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = subprocess.Popen(
        tb.command(str(tmp_path), "127.0.0.1", port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=guard_env(secure=True),
    )
    try:
        assert tb.wait_ready(proc, url, "k" * 43, timeout=90)
        cmdline = " ".join(psutil.Process(proc.pid).cmdline())
        assert "k" * 43 not in cmdline and "p" * 32 not in cmdline  # ps shows every user this

        plain = requests.get(url, timeout=5)
        assert plain.status_code == 403 and "<html" not in plain.text.lower()
        assert requests.get(url + "data/runs", timeout=5).status_code == 403
        wrong = {"Authorization": "Bearer " + "x" * 43}
        assert requests.get(url + "data/runs", headers=wrong, timeout=5).status_code == 403
        proxied = url + "p" * 32 + "/data/runs"
        assert requests.get(proxied, timeout=5).status_code == 403
        bob = requests.get(proxied, cookies={"proxy-user": "bob"}, timeout=5)
        assert bob.status_code == 403 and "bob is not the owner" in bob.text

        auth = {"Authorization": "Bearer " + "k" * 43}
        assert requests.get(url + "data/runs", headers=auth, timeout=5).json() == []
        assert requests.get(proxied, cookies={"proxy-user": "alice"}, timeout=5).json() == []
        page = requests.get(url + "p" * 32 + "/", cookies={"proxy-user": "alice"}, timeout=5)
        assert page.status_code == 200 and "tb-relative-root" in page.text
        browser = requests.Session()
        first = browser.get(url + "?tony_token=" + "k" * 43, timeout=5)  # follows the redirect
        assert first.status_code == 200 and first.url == url and "tb-relative-root" in first.text
        assert browser.get(url + "data/runs", timeout=5).json() == []
    finally:
        proc.kill()
        proc.wait()


def test_tensorboard_without_its_guards_keys_does_not_start(tmp_path):
    cmd = tb.command(str(tmp_path), "127.0.0.1", tb.free_port())
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "needs its guard's keys" in done.stderr


@pytest.mark.parametrize("backend", ["local", "yarn"])
def test_tensorboard_dir_is_the_job_dir_locally_and_the_chief_container_on_yarn(
    tmp_path, monkeypatch, backend
):
    from tony_jupyter.am.main import executor_env
    from tony_jupyter.executor.main import resolve_tensorboard_dir

    _, spec = parse_job_args(f"--workers 1 --backend {backend}")
    env = executor_env("j", spec, "http://am", tmp_path / "am-dir")
    monkeypatch.chdir(tmp_path)  # the task's cwd: on YARN its container's dir
    resolve_tensorboard_dir(env)
    expected = tmp_path / ("am-dir/tensorboard" if backend == "local" else "tensorboard")
    assert env["TONY_TENSORBOARD_DIR"] == str(expected)


def test_the_guard_is_told_secure_mode_and_the_owner_from_the_environment(monkeypatch):
    monkeypatch.setenv("USER", "alice")
    config = tb.guard_config({"TONY_SECURE": "1"})
    assert config.secure is True and config.owner == "alice"
    assert tb.guard_config({}).secure is False  # off unless the backend says so
    assert config.key != tb.guard_config({}).key and len(config.path_key) >= 32
