"""JupyterLab in Debian's Chromium (Playwright, no browser download), under a JupyterHub-style
base_url: a %%tony --workers 2 training cell shows its widget, task table and TensorBoard
(through /tony/proxy/) live; the "TonY jobs" side panel lists jobs, opens TensorBoard and logs in
main-area tabs, and kills a job; after a page reload those tabs come back, the finished job's
TensorBoard started on demand (server_ext/boards.py); its job page (timeline, task table, metric
charts, log search) and the comparison of the two finished runs. Screenshots land in
build/browser/."""

import os
import re
import time
from pathlib import Path

import pytest
import requests
from helpers.browser import BASE_URL, command, run_first_cells, shot, shot_on_failure
from helpers.cells import MWMS_MODEL

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETUP = """\
%load_ext tony_jupyter
from sklearn.datasets import load_digits
X, y = load_digits(return_X_y=True)
X = (X / 16.0).astype("float32")
"""

# Trains (scalars stream to TensorBoard), then holds the job open until the test has looked at
# TensorBoard (the chief's TensorBoard ends with the job): the test creates `release`.
TRAIN = (
    """\
%%tony --workers 2 --name digits --conf tony.task.max-missed-heartbeats=60
import os, time
import tensorflow as tf
import tony_jupyter
"""
    + MWMS_MODEL
    + """model.fit(dataset, epochs=3, steps_per_epoch=30, verbose=2,
          callbacks=[tony_jupyter.progress()])
deadline = time.time() + 240
while not os.path.exists(release) and time.time() < deadline:
    time.sleep(0.2)
"""
)

# Reports a falling loss (a second run to compare with the first) until it is killed.
SLEEPER = """\
%%tony --workers 1 --async --name sleeper --no-tensorboard
import time, tony_jupyter
for step in range(1, 1200):
    tony_jupyter.report(step=step, loss=2.3 * 0.93 ** step)
    time.sleep(0.25)
"""


@pytest.fixture
def notebook_cells(tmp_path) -> list[str]:
    release = tmp_path / "release"  # the lab fixture's: touched as the test ends
    return [SETUP + f"release = {str(release)!r}\n", TRAIN, SLEEPER]


def test_training_cell_widget_tensorboard_and_jobs_panel(page, lab):
    with shot_on_failure(page, "failure"):
        _run(page, lab)


def _run(page, lab):
    from playwright.sync_api import expect

    cells = run_first_cells(page, lab, "train.ipynb", 3)

    train = cells.nth(1).locator(".jp-OutputArea")
    # the live widget: both workers in the task table, then the TensorBoard tab
    expect(train.locator("table")).to_contain_text("worker:1", timeout=180_000)
    expect(train.locator("table")).to_contain_text("worker:0")
    tab = train.locator(".lm-TabBar-tab", has_text="TensorBoard")
    expect(tab).to_be_visible(timeout=180_000)
    tab.click()
    frame_el = train.locator("iframe.tony-tensorboard")
    expect(frame_el).to_have_attribute("src", f"{BASE_URL}tony/proxy/" + _job_id(lab) +
                                       "/tensorboard/")  # fmt: skip
    frame = frame_el.content_frame
    # TensorBoard's own page, through the proxy, drawing the scalars progress() writes
    expect(frame.locator("body")).to_contain_text("epoch_loss", timeout=180_000)
    expect(frame.locator("canvas, svg path.line, line-chart").first).to_be_attached(timeout=60_000)
    _in_an_origin_of_its_own(frame_el, _job_id(lab))
    expect(train).to_contain_text("RUNNING")
    cells.nth(1).scroll_into_view_if_needed()
    shot(page, "1-widget-tensorboard")

    # the side panel: the running job, its TensorBoard and logs in main-area tabs
    page.locator(".jp-SideBar .lm-TabBar-tab[title='TonY jobs']").click()
    panel = page.locator("#tony-jobs-panel")
    job = panel.locator(f".tony-job[data-job-id='{_job_id(lab)}']")
    expect(job.locator(".tony-state")).to_have_text("RUNNING", timeout=30_000)
    job.evaluate("row => { row.tonyMark = 'same node' }")  # rows are updated, not rebuilt
    job.locator("button.tony-open-tensorboard").click()
    main_frame = page.locator(".tony-tensorboard-frame iframe")
    expect(main_frame.content_frame.locator("body")).to_contain_text("epoch_loss", timeout=120_000)
    _in_an_origin_of_its_own(main_frame, _job_id(lab))
    shot(page, "2-panel-tensorboard-tab")
    job.locator("button.tony-open-logs").click()
    expect(page.locator(".tony-logs-text")).to_contain_text("Epoch 3/3", timeout=60_000)
    shot(page, "3-panel-logs-tab")

    # let the job end: the widget reaches SUCCEEDED (the static report replaces it)
    lab["release"].touch()
    expect(train).to_contain_text("SUCCEEDED", timeout=120_000)
    expect(train).to_contain_text("worker:1")
    expect(job.locator(".tony-state")).to_have_text("SUCCEEDED", timeout=30_000)
    expect(job.locator("button.tony-kill")).to_be_hidden()
    assert job.evaluate("row => row.tonyMark") == "same node"

    # a second, sleeping job started --async: killed from the side panel
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="train.ipynb").click()
    cells.nth(2).click()
    command(page, "notebook:run-cell")
    sleeper = panel.locator(".tony-job", has_text="sleeper")
    expect(sleeper.locator(".tony-state")).to_have_text("RUNNING", timeout=120_000)
    expect(sleeper.locator("button.tony-open-tensorboard")).to_be_hidden()  # --no-tensorboard
    # a few steps reported (the first report() imports TensorFlow for its scalars): a curve
    expect(sleeper.locator(".tony-job-meta")).to_contain_text(
        re.compile(r"loss (1\.[0-5]|0\.)"), timeout=90_000
    )
    shot(page, "4-panel-two-jobs")
    sleeper.locator("button.tony-kill").click()
    expect(sleeper.locator(".tony-state")).to_have_text("KILLED", timeout=60_000)
    cells.nth(1).scroll_into_view_if_needed()
    shot(page, "5-killed-and-report")

    # a page reload brings the log and TensorBoard tabs back (WidgetTracker + ILayoutRestorer),
    # the log tab on the task picked last
    job_id = _job_id(lab)
    tabs = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")
    tabs.filter(has_text="Logs · digits").click()
    page.locator(".tony-logs-task").select_option("worker:1")
    expect(page.locator(".tony-logs-text")).to_contain_text("Epoch 3/3", timeout=30_000)
    _wait_workspace_saved(lab, job_id, task="worker:1")
    page.reload()
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    expect(tabs.filter(has_text="TensorBoard · digits")).to_be_visible(timeout=60_000)
    tensorboard_src = re.escape(f"{BASE_URL}tony/proxy/{job_id}/tensorboard/") + "$"
    expect(page.locator(".tony-tensorboard-frame iframe")).to_have_attribute(
        "src", re.compile(tensorboard_src)
    )
    tabs.filter(has_text="Logs · digits").click()
    expect(page.locator(".tony-logs-task")).to_have_value("worker:1", timeout=30_000)
    expect(page.locator(".tony-logs-text")).to_contain_text("Epoch 3/3", timeout=30_000)
    expect(panel.locator(f".tony-job[data-job-id='{job_id}'] .tony-state")).to_have_text(
        "SUCCEEDED", timeout=30_000
    )
    shot(page, "6-tabs-restored-after-reload")
    _finished_job_pages(page, panel, job_id)


def _in_an_origin_of_its_own(frame_el, job_id: str) -> None:
    """A TensorBoard iframe (the widget's, the panel's): sandboxed without allow-same-origin,
    its page on the framed route (server_ext/sandbox.py), its scripts in an opaque origin,
    where Jupyter's session, cookies and API are out of reach."""
    sandbox = frame_el.get_attribute("sandbox") or ""
    assert "allow-scripts" in sandbox and "allow-same-origin" not in sandbox, sandbox
    frame = frame_el.content_frame
    seen = frame.locator("html").evaluate(
        """async () => {
            const out = {origin: self.origin, url: location.href};
            try { out.parent = String(parent.document.cookie); } catch (e) { out.parent = e.name; }
            try { out.cookie = document.cookie; } catch (e) { out.cookie = e.name; }
            try {
                const signal = AbortSignal.timeout(15000);
                const r = await fetch('/user/tester/api/kernels', {signal});
                out.kernels = r.status;
            } catch (e) { out.kernels = e.name; }
            return out;
        }"""
    )
    assert seen["origin"] == "null", seen
    assert f"/tony/framed/{job_id}/tensorboard/" in seen["url"], seen
    assert seen["parent"] == "SecurityError" and seen["cookie"] == "SecurityError", seen
    assert seen["kernels"] != 200, seen  # no session: refused (403) or unreadable (an error)


def _finished_job_pages(page, panel, job_id: str) -> None:
    """The finished job's TensorBoard (from its history), its job page, and two runs compared."""
    from playwright.sync_api import expect

    tabs = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")
    tabs.filter(has_text="TensorBoard · digits").click()
    frame = page.locator(".tony-tensorboard-frame iframe")
    expect(frame.content_frame.locator("body")).to_contain_text("epoch_loss", timeout=150_000)
    board = frame.content_frame
    # its scalars page, from inside: the frame is another origin than the page (sandbox.py)
    board.locator("html").evaluate("() => { location.hash = '#scalars' }")
    expect(board.locator("body")).to_contain_text("epoch_loss", timeout=60_000)
    expect(board.locator("canvas, svg path.line, line-chart").first).to_be_attached(timeout=60_000)
    time.sleep(2)  # the charts draw after the page has loaded
    shot(page, "7-finished-job-tensorboard")

    row = panel.locator(f".tony-job[data-job-id='{job_id}']")
    row.locator("button.tony-open-job").click()
    job_page = page.locator(".tony-job-page")
    expect(job_page.locator(".tony-page-head")).to_contain_text("SUCCEEDED", timeout=30_000)
    expect(job_page.locator(".tony-timeline rect.tony-attempt-SUCCEEDED")).to_have_count(1)
    for task in ("worker:0", "worker:1"):
        expect(job_page.locator(f".tony-task-table tr[data-task='{task}']")).to_contain_text(
            "SUCCEEDED"
        )
    loss = job_page.locator(".tony-chart[data-metric='loss'] path.tony-chart-line")
    expect(loss).to_have_count(2)  # a line per worker
    assert loss.first.get_attribute("d").count("L") >= 3, "the loss line has too few points"
    job_page.locator(".tony-log-search-query").fill("epoch 3/3")
    expect(job_page.locator(".tony-log-search-text mark").first).to_have_text(
        "Epoch 3/3", timeout=30_000
    )
    expect(job_page.locator(".tony-log-search-count")).to_contain_text(" of ")
    shot(page, "8-job-page")

    sleeper = panel.locator(".tony-job", has_text="sleeper")
    compare = panel.locator("button.tony-compare")
    expect(compare).to_be_hidden()
    row.locator("input.tony-job-select").check()
    sleeper.locator("input.tony-job-select").check()
    expect(compare).to_have_text("Compare 2")
    compare.click()
    runs = page.locator(".tony-compare")
    loss = runs.locator(".tony-chart[data-metric='loss'] path.tony-chart-line")
    expect(loss).to_have_count(2, timeout=30_000)  # one curve per job, overlaid
    assert all(
        d.count("L") >= 2 for d in loss.evaluate_all("ps => ps.map(p => p.getAttribute('d'))")
    )
    expect(runs.locator(".tony-chart[data-metric='loss'] .tony-chart-key")).to_have_count(2)
    name = runs.locator(".tony-spec-table tr.tony-spec-differs[data-key='name']")
    expect(name).to_contain_text("digits")
    expect(name).to_contain_text("sleeper")
    shot(page, "9-compare-runs")
    runs.locator(".tony-spec-table").scroll_into_view_if_needed()
    shot(page, "10-compare-specs")


def _wait_workspace_saved(lab, job_id: str, task: str) -> None:
    """JupyterLab saves the layout to the server's workspace a moment after it changes: a
    reload before that would restore an older layout."""
    url = f"{lab['url']}lab/api/workspaces/default"
    deadline = time.monotonic() + 30
    while True:
        got = requests.get(url, params={"token": lab["token"]}, timeout=5)
        data = got.json().get("data", {}) if got.ok else {}
        logs = data.get(f"tony-logs:{job_id}", {}).get("data", {})
        if logs.get("task") == task and f"tony-tensorboard:{job_id}" in data:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"the workspace never held both tabs of {job_id}: {sorted(data)}")
        time.sleep(0.5)


def _job_id(lab) -> str:
    jobs = sorted(p.name for p in Path(os.environ["TONY_JUPYTER_HOME"], "jobs").glob("tony_*"))
    return jobs[0]
