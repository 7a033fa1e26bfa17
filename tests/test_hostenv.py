"""A job's code is not the notebook: a local task starts without the Jupyter server's
variables (its token, JupyterHub's) and with a runtime directory of its own, so Jupyter's own
discovery finds no server from task code (hostenv.py; README, "Threat model")."""

import json

from helpers.jobs import wait_no_processes

from tony_jupyter.core.hostenv import without_jupyter

SERVER_TOKEN = "f00dfeed" * 6

CELL = """
import os
from jupyter_server.serverapp import list_running_servers
from jupyter_core.paths import jupyter_runtime_dir
seen = {
    "env": {k: v for k, v in os.environ.items() if k.startswith(("JUPYTER", "JPY_"))},
    "token_in_env": any(TOKEN in v for v in os.environ.values()),
    "runtime_dir": jupyter_runtime_dir(),
    "servers": list(list_running_servers()),
    "token_in_am_env": TOKEN in open(f"/proc/{os.getppid()}/environ", "rb").read().decode(),
}
"""


def test_a_local_task_sees_no_jupyter_server(shell, tony_home, tmp_path, monkeypatch):
    runtime = tmp_path / "runtime"  # the user's Jupyter runtime directory, with a server in it
    runtime.mkdir()
    server = {"url": "http://127.0.0.1:1/", "token": SERVER_TOKEN, "pid": 1, "port": 1}
    (runtime / "jpserver-1.json").write_text(json.dumps(server))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTER_TOKEN", SERVER_TOKEN)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", SERVER_TOKEN)
    monkeypatch.setenv("JPY_API_TOKEN", SERVER_TOKEN)
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/train.ipynb")
    shell.user_ns["TOKEN"] = SERVER_TOKEN
    shell.run_cell_magic("tony", "--workers 1 --no-tensorboard --pull seen", CELL)
    seen = shell.user_ns["seen"]
    assert list(seen["env"]) == ["JUPYTER_RUNTIME_DIR"], seen["env"]
    assert seen["runtime_dir"] != str(runtime) and "jupyter-runtime" in seen["runtime_dir"]
    assert seen["servers"] == []
    assert not seen["token_in_env"] and not seen["token_in_am_env"]
    assert wait_no_processes(tony_home) == []


def test_without_jupyter_keeps_everything_else():
    env = {"JUPYTER_TOKEN": "t", "jupyter_x": "y", "JPY_PARENT_PID": "1", "PATH": "/bin",
           "TONY_JUPYTER_HOME": "/h", "JUPYTERHUB_API_TOKEN": "t", "MYJUPYTER": "kept"}  # fmt: skip
    assert without_jupyter(env) == {"PATH": "/bin", "TONY_JUPYTER_HOME": "/h", "MYJUPYTER": "kept"}
