"""What the browser tests share: JupyterLab in Debian's Chromium (Playwright, no browser
download) under a JupyterHub-style base_url, on a notebook each test module writes
(``notebook_cells``), and its screenshots."""

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
from helpers.browser import ARTIFACTS, BASE_URL, CHROMIUM, CHROMIUM_ARGS, free_port


@pytest.fixture
def notebook_name() -> str:
    return "train.ipynb"


@pytest.fixture
def lab(tmp_path, tony_home, notebook_cells, notebook_name):
    """JupyterLab under BASE_URL on a notebook of ``notebook_cells`` (a fixture each test
    module gives), its root in tmp_path; every job left is killed as the test ends."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    root = tmp_path / "root"
    root.mkdir()
    release = tmp_path / "release"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in notebook_cells]
    nbformat.write(nb, root / notebook_name)
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
    )
    log = open(tmp_path / "lab.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "lab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--ServerApp.base_url={BASE_URL}", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
            *(["--allow-root"] if os.geteuid() == 0 else []),  # CI containers run as root
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}{BASE_URL}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if requests.get(f"{url}api/status", params={"token": token}, timeout=2).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
    yield {"url": url, "token": token, "release": release, "log": tmp_path / "lab.log"}
    release.touch()
    for rec in (tony_home / "jobs").glob("*"):  # nothing may outlive the test
        from tony_jupyter.launcher.client import JobRecord
        from tony_jupyter.launcher.pickclient import open_client

        client = open_client(JobRecord(rec.name, rec))
        client.kill("test teardown")
        client.release()
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stem = Path(notebook_name).stem
    shutil.copy(
        tmp_path / "lab.log", ARTIFACTS / ("lab.log" if stem == "train" else f"{stem}-lab.log")
    )


@pytest.fixture
def page(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page(viewport={"width": 1500, "height": 1000})
        finally:
            browser.close()
