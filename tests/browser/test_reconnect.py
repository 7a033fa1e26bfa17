"""A run is never lost: in JupyterLab in Debian's Chromium (Playwright), a %%tony cell's job
comes back live in its cell when the page is closed and opened again, when the kernel restarts
(then its --pull names come back through the view's "Collect result"), and when the Jupyter
server is stopped and started; each saved notebook, read without a kernel, holds the final
state in the output's text/html. One JupyterLab, restarted once, on the local backend; the
three jobs run side by side. The page closed and opened again on YARN too (the devcluster; the
full tier). The page-open -> live-view delays land in build/browser/reconnect.json
(reconnect-yarn.json)."""

import getpass
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
from helpers.browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, command, free_port
from helpers.yarn import TEST_MEMORY_MB, Cluster

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JOB_MIME = "application/vnd.tony.job+json"
DELAYS: dict[str, float] = {}
# the cells of the notebook shown (the workspace may bring back others, hidden behind it)
CELLS = ".jp-NotebookPanel:visible .jp-Notebook .jp-Cell"


def minute_job(name: str, seconds: int, pull: str = "", flags: str = "") -> str:
    """A job that prints a line a second for ``seconds`` s; with ``pull``, it sets that name;
    ``flags``: more of %%tony's flags."""
    flags = (f" {flags}" if flags else "") + (f" --pull {pull}" if pull else "")
    body = f"{pull} = 42\n" if pull else ""
    return (
        f"%%tony --workers 1 --no-tensorboard --name {name}{flags}\n"
        f"import time\n{body}"
        f"for i in range({seconds}):\n"
        "    print(f'line {i:03d}', flush=True)\n"
        "    time.sleep(1)\n"
        "'done'\n"
    )


class Lab:
    """One JupyterLab server on a fixed port and root, which a test may stop and start; with
    ``cluster_env`` (a devcluster's env()), its kernels reach that cluster as a user's would."""

    def __init__(self, tmp: Path, cluster_env: dict[str, str] | None = None):
        self.tmp, self.root, self.home = tmp, tmp / "root", tmp / "tony-home"
        self.root.mkdir()
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}/"
        settings = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        self.env = dict(
            os.environ,
            TONY_JUPYTER_HOME=str(self.home),
            JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
            JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(tmp / "lab-settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(tmp / "lab-workspaces"),
        )
        for k in ("HADOOP_CONF_DIR", "TONY_YARN_RM_URL", "TONY_WEBHDFS_URL", "HADOOP_USER_NAME"):
            self.env.pop(k, None)
        self.env.update(cluster_env or {})
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.tmp / "lab.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "lab", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.root,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if requests.get(f"{self.url}api/status", params={"token": self.token}).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.2)
        pytest.fail("JupyterLab did not start:\n" + (self.tmp / "lab.log").read_text()[-3000:])

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None

    def notebook(self, name: str, cells: list[str]) -> Path:
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        nbformat.write(nb, self.root / name)
        return self.root / name


def serve(lab: Lab, stem: str):
    """Generator for a fixture: ``lab`` started; afterwards its jobs killed, the server stopped,
    its log and the delays noted written as ARTIFACTS/{stem}-lab.log and {stem}.json."""
    lab.start()
    yield lab
    from tony_jupyter.launcher.client import JobRecord
    from tony_jupyter.launcher.pickclient import open_client

    for rec in (lab.home / "jobs").glob("*"):  # nothing may outlive the tests (local and YARN)
        client = open_client(JobRecord(rec.name, rec))
        client.kill("test teardown")
        client.release()
    lab.stop()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{stem}-lab.log").write_bytes((lab.tmp / "lab.log").read_bytes())
    (ARTIFACTS / f"{stem}.json").write_text(json.dumps(DELAYS, indent=1))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from serve(Lab(tmp_path_factory.mktemp("reconnect")), "reconnect")


@pytest.fixture
def yarn_lab(tmp_path, yarn_cluster):
    """A JupyterLab whose kernels send their jobs to the devcluster; afterwards, no application,
    container or staging directory of the test may be left there."""
    cluster = Cluster(yarn_cluster, getpass.getuser())
    before = {a["id"] for a in cluster.apps()}
    yield from serve(Lab(tmp_path, yarn_cluster.env()), "reconnect-yarn")
    cluster.wait_nothing_left({a["id"] for a in cluster.apps()} - before)


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def open_notebook(browser, lab, name: str, cells: int, workspace: str):
    """A page of its own, in a workspace of its own (so it brings back no other notebook)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{lab.url}lab/workspaces/{workspace}/tree/{name}?token={lab.token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    expect(page.locator(CELLS)).to_have_count(cells, timeout=120_000)
    return page


def wait_kernel_idle(page) -> None:
    page.wait_for_function(
        "window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )


def run_first_two(page) -> None:
    wait_kernel_idle(page)
    page.locator(CELLS).nth(0).click()
    command(page, "notebook:run-cell-and-select-next")
    command(page, "notebook:run-cell-and-select-next")


def job_of(lab, name: str) -> str:
    for rec in sorted((lab.home / "jobs").glob("*")):
        spec = json.loads((rec / "spec.json").read_text())
        if spec.get("name") == name:
            return rec.name
    raise AssertionError(f"no job named {name}")


def live_view(page, cell: int, since: float, what: str):
    """The cell's kernel-free view, once it shows the job RUNNING: the delay since ``since``
    noted under ``what``."""
    from playwright.sync_api import expect

    view = page.locator(CELLS).nth(cell).locator(".tony-cell-view")
    expect(view).to_have_attribute("data-tony-state", "RUNNING", timeout=60_000)
    DELAYS[what] = round(time.monotonic() - since, 2)
    return view


def save_and_check(page, path: Path, job_id: str, state: str = "SUCCEEDED") -> None:
    """Save from the UI; the file, read without a kernel, holds the final state as HTML."""
    page.wait_for_function(  # the view has written the final state into its output
        """(mime) => {
          const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
          for (let i = 0; i < cells.length; i++) {
            const outs = cells.get(i).outputs;
            for (let j = 0; outs && j < outs.length; j++) {
              const data = outs.get(j).data;
              if (data[mime] && data['text/html']) return true;
            }
          }
          return false;
        }""",
        arg=JOB_MIME,
        timeout=30_000,
    )
    page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.content.model.dirty === true", timeout=30_000
    )
    command(page, "docmanager:save")
    page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.content.model.dirty === false", timeout=30_000
    )
    nb = nbformat.read(path, as_version=4)
    outs = [o for c in nb.cells for o in c.get("outputs", []) if JOB_MIME in o.get("data", {})]
    assert [o["data"][JOB_MIME]["job_id"] for o in outs] == [job_id]
    html, text = outs[0]["data"]["text/html"], outs[0]["data"]["text/plain"]
    assert f'data-tony-state="{state}"' in html and "worker:0" in html and state in text
    assert f"%tony logs {job_id}" in html and f"%tony logs {job_id}" in text
    # as a viewer without the extension or a kernel renders it (nbconvert, as nbviewer does)
    from nbconvert import HTMLExporter

    page_html, _ = HTMLExporter().from_notebook_node(nb)
    assert f'data-tony-state="{state}"' in page_html and JOB_MIME not in page_html


def test_runs_are_never_lost(browser, lab):
    """The three cases at once, their jobs side by side (one JupyterLab, about 170 s in all):
    (1) a 60 s job's page closed at 15 s and opened at 40 s; (2) a kernel restarted mid-job,
    its --pull name collected once it ended; (3) the server stopped and started mid-job. And
    (4) a job's page closed and opened again: the kernel-free view's Stacks and Kill act."""
    from playwright.sync_api import expect

    paths = {
        "minute": lab.notebook(
            "minute.ipynb", ["%load_ext tony_jupyter", minute_job("minute", 60)]
        ),
        "restart": lab.notebook(
            "restart.ipynb",
            [
                "%load_ext tony_jupyter",
                minute_job("restart", 100, pull="answer"),
                "print('got', answer)",
            ],
        ),
        "server": lab.notebook(
            "server.ipynb", ["%load_ext tony_jupyter", minute_job("server", 150)]
        ),
        "kill": lab.notebook("kill.ipynb", ["%load_ext tony_jupyter", minute_job("kill", 600)]),
    }
    cells = {"minute": 2, "restart": 3, "server": 2, "kill": 2}
    pages = {n: open_notebook(browser, lab, f"{n}.ipynb", cells[n], workspace=n) for n in paths}
    for page in pages.values():
        run_first_two(page)
    started = 0.0
    for page in pages.values():
        output = page.locator(CELLS).nth(1).locator(".jp-OutputArea")
        expect(output).to_contain_text("RUNNING", timeout=120_000)
        started = started or time.monotonic()  # (1)'s job is RUNNING: its clock
    jobs = {n: job_of(lab, n) for n in paths}

    # (1) the page closed at 15 s, unsaved: what it showed is gone
    time.sleep(max(0.0, 15 - (time.monotonic() - started)))
    pages.pop("minute").close()
    print(f"(1) closed at {time.monotonic() - started:.1f} s")

    # (1) opened again at 40 s: the live view, with the lines printed while no page was open
    time.sleep(max(0.0, 40 - (time.monotonic() - started)))
    opened = time.monotonic()
    pages["minute"] = page = open_notebook(browser, lab, "minute.ipynb", 2, workspace="minute")
    minute = live_view(page, 1, opened, "page open -> live view (reopened page)")
    for n in (16, 25, 38):
        expect(minute.locator(".tony-cell-logs")).to_contain_text(f"line {n:03d}")
    page.screenshot(path=str(ARTIFACTS / "reconnect-1-reopened.png"))
    print(f"(1) reopened at {opened - started:.1f} s, live {time.monotonic() - started:.1f} s")

    # (1) ends SUCCEEDED in its cell
    expect(minute).to_have_attribute("data-tony-state", "SUCCEEDED", timeout=90_000)
    expect(minute.locator(".tony-cell-logs")).to_contain_text("line 059")
    save_and_check(page, paths["minute"], jobs["minute"])

    # (4) without a kernel the view acts on the job as the panel does: Stacks, then Kill
    pages.pop("kill").close()
    page = open_notebook(browser, lab, "kill.ipynb", 2, workspace="kill")
    view = live_view(page, 1, time.monotonic(), "page open -> live view (to kill)")
    expect(view.locator("button.tony-cell-tensorboard")).to_be_hidden()  # --no-tensorboard
    view.locator("button.tony-stacks-button").click()
    stacks = view.locator(".tony-stacks")
    expect(stacks).to_contain_text("worker:0", timeout=60_000)
    expect(stacks).to_contain_text('File "<tony-cell>"')  # the cell's own frame, in its loop
    page.screenshot(path=str(ARTIFACTS / "reconnect-4-stacks.png"))
    view.locator("button.tony-cell-kill").click()
    expect(view).to_have_attribute("data-tony-state", "KILLED", timeout=60_000)
    expect(view.locator("button.tony-cell-kill")).to_be_hidden()
    expect(view.locator("button.tony-stacks-button")).to_be_hidden()
    save_and_check(page, paths["kill"], jobs["kill"], state="KILLED")
    page.close()

    # (2) the kernel restarted from the UI: the view comes back by itself
    page = pages["restart"]
    command(page, "notebook:restart-kernel")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    view = live_view(page, 1, time.monotonic(), "kernel restart -> live view")

    # (2) the job ends in its view; its result collected into the new kernel
    expect(view).to_have_attribute("data-tony-state", "SUCCEEDED", timeout=120_000)
    view.locator("button.tony-cell-collect").click()
    result = page.locator(CELLS).nth(2)  # "%tony result ID" in a new cell below, run
    expect(result).to_contain_text(f"%tony result {jobs['restart']}", timeout=30_000)
    expect(result.locator(".jp-OutputArea")).to_contain_text("'done'", timeout=60_000)
    page.locator(CELLS).nth(3).click()
    command(page, "notebook:run-cell")
    expect(page.locator(CELLS).nth(3).locator(".jp-OutputArea")).to_contain_text("got 42")
    page.screenshot(path=str(ARTIFACTS / "reconnect-2-restarted.png"))
    save_and_check(page, paths["restart"], jobs["restart"])

    # (3) the server stopped and started (its kernels with it; the jobs go on)
    print(f"(3) server stopped at {time.monotonic() - started:.1f} s")
    pages.pop("server").close()
    lab.stop()
    time.sleep(2)
    lab.start()
    opened = time.monotonic()
    page = open_notebook(browser, lab, "server.ipynb", 2, workspace="server")
    server = live_view(page, 1, opened, "page open -> live view (after a server restart)")
    page.screenshot(path=str(ARTIFACTS / "reconnect-3-server.png"))

    expect(server).to_have_attribute("data-tony-state", "SUCCEEDED", timeout=180_000)
    expect(server.locator(".tony-cell-logs")).to_contain_text("line 149")
    save_and_check(page, paths["server"], jobs["server"])


@pytest.mark.yarn
def test_a_yarn_run_is_never_lost(browser, yarn_lab):
    """(1) with ``--backend yarn``: a 45 s job's page closed, unsaved, 15 s after the job is
    RUNNING and opened again 15 s later shows the live view, with the lines the container
    printed while no page was open; the job ends SUCCEEDED in that cell."""
    from playwright.sync_api import expect

    lab = yarn_lab
    flags = f"--backend yarn --memory {TEST_MEMORY_MB}m"
    path = lab.notebook(
        "yarn.ipynb", ["%load_ext tony_jupyter", minute_job("yarn", 45, flags=flags)]
    )
    page = open_notebook(browser, lab, "yarn.ipynb", 2, workspace="yarn")
    run_first_two(page)
    output = page.locator(CELLS).nth(1).locator(".jp-OutputArea")
    expect(output).to_contain_text("RUNNING", timeout=180_000)
    started = time.monotonic()
    job = job_of(lab, "yarn")

    # closed 15 s after RUNNING, unsaved, once the container's lines reach the page
    expect(output).to_contain_text("line 000", timeout=60_000)
    time.sleep(max(0.0, 15 - (time.monotonic() - started)))
    shown = max(int(n) for n in re.findall(r"line (\d{3})", output.inner_text()))
    page.close()
    closed = time.monotonic()
    print(f"closed at {closed - started:.1f} s, line {shown:03d} shown")

    # opened again 15 s later: the live view, with the lines printed while no page was open
    time.sleep(15)
    opened = time.monotonic()
    page = open_notebook(browser, lab, "yarn.ipynb", 2, workspace="yarn")
    view = live_view(page, 1, opened, "page open -> live view (reopened page, yarn)")
    logs = view.locator(".tony-cell-logs")
    for n in (shown + 1, shown + 10):  # printed between the close and the reopening
        expect(logs).to_contain_text(f"line {n:03d}")
    page.screenshot(path=str(ARTIFACTS / "reconnect-yarn-reopened.png"))
    print(f"reopened at {opened - started:.1f} s, live {time.monotonic() - started:.1f} s")

    expect(view).to_have_attribute("data-tony-state", "SUCCEEDED", timeout=120_000)
    expect(logs).to_contain_text("line 044")
    save_and_check(page, path, job)
