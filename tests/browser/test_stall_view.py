"""A stalled job in JupyterLab (Chromium, as tests/browser/test_lab.py): three PyTorch ranks step
together through a collective until rank 1 sleeps before one. The live widget says the job is
stalled and shows every rank's stacks grouped (ranks 0 and 2, in the collective, folded
together; rank 1 marked: it differs and is furthest behind), each task's CPU and memory as
sparklines, and its Stacks button takes them again; the side panel marks the job's row and
its Stacks button shows the groups; the job page shows the stall, the stacks gathered when it
was marked, the sparklines and its own Stacks button. Screenshots (stall-*.png) land in
$TONY_SCREENSHOT_DIR, else build/browser/."""

import json
import os
import time
from pathlib import Path

import pytest
import requests
from helpers.browser import run_first_cells, shot, shot_on_failure
from helpers.jobs import FAST

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # full tier: tests/tiers.py

STALL = f"""\
%%tony --framework pytorch --workers 3 --memory 1g --no-tensorboard --name stalled --async \
{FAST} \
--conf tony.stall.factor=3 --conf tony.stall.floor-sec=2 --conf tony.stall.ceiling-sec=30
import time, torch, torch.distributed as dist, tony_jupyter
dist.init_process_group("gloo")
rank = dist.get_rank()

def wait_here():
    time.sleep(600)

for step in range(1, 100000):
    if rank == 1 and step == 6:
        wait_here()
    tony_jupyter.report(step=step)
    dist.all_reduce(torch.ones(1))
    time.sleep(0.2)
"""


@pytest.fixture
def notebook_name() -> str:
    return "stall.ipynb"


@pytest.fixture
def notebook_cells() -> list[str]:
    return ["%load_ext tony_jupyter", STALL]


def test_a_stall_and_its_stacks_in_the_widget_the_panel_and_the_job_page(page, lab):
    pytest.importorskip("torch")
    with shot_on_failure(page, "stall-failure"):
        _run(page, lab)


def _run(page, lab):
    from playwright.sync_api import expect

    cells = run_first_cells(page, lab, "stall.ipynb", 2)

    # the widget: the stall's line, then the stacks gathered as it was marked, grouped
    out = cells.nth(1).locator(".jp-OutputArea")
    expect(out.locator(".tony-stall")).to_contain_text("stalled since", timeout=300_000)
    expect(out.locator(".tony-stall")).to_contain_text("furthest behind: worker:1")
    stacks = out.locator("details", has_text="Stacks")
    expect(stacks).to_contain_text("stacks when the job was marked stalled", timeout=60_000)
    expect(stacks).to_contain_text("3 task(s) in 2 group(s) of the same stacks")
    expect(stacks).to_contain_text(">>> worker:1 (differs, furthest behind)")
    expect(stacks).to_contain_text("worker:0, worker:2")
    expect(stacks).to_contain_text("in wait_here")
    odd = stacks.locator("b", has_text=">>> worker:1")
    assert odd.evaluate("b => getComputedStyle(b).color") == "rgb(214, 69, 65)"  # in red
    for task in ("worker:0", "worker:1", "worker:2"):
        row = out.locator(f"tr[data-task='{task}']")
        expect(row.locator("svg.tony-spark[data-series='cpu'] polyline")).to_have_count(1)
        expect(row.locator("svg.tony-spark[data-series='memory'] polyline")).to_have_count(1)
    job_id = _job_id()
    _print_figures(lab, job_id)
    cells.nth(1).scroll_into_view_if_needed()
    shot(page, "stall-1-widget")
    # its Stacks button takes them again, now (--async: the kernel is free to take the click;
    # a cell that waits for its job handles no widget event under ipykernel 7)
    out.locator("button", has_text="Stacks").click()
    expect(stacks).not_to_contain_text("when the job was marked stalled", timeout=60_000)
    expect(stacks).to_contain_text(">>> worker:1 (differs, furthest behind)")
    shot(page, "stall-2-widget-stacks-now")

    # the side panel: the row marked stalled, its Stacks button, the odd rank highlighted
    page.locator(".jp-SideBar .lm-TabBar-tab[title='TonY jobs']").click()
    row = page.locator(f"#tony-jobs-panel .tony-job[data-job-id='{job_id}']")
    expect(row.locator(".tony-stall-mark")).to_be_visible(timeout=30_000)
    row.locator("button.tony-stacks-button").click()
    groups = row.locator(".tony-stacks-pane .tony-stack-group")
    expect(groups).to_have_count(2, timeout=60_000)
    expect(groups.first).to_have_attribute("data-tasks", "worker:0 worker:2")
    odd = row.locator(".tony-stack-group.tony-stack-odd")
    expect(odd).to_have_attribute("data-tasks", "worker:1")
    expect(odd).to_contain_text("differs, furthest behind")
    expect(odd).to_contain_text("in wait_here")
    shot(page, "stall-3-panel-stacks")

    # the job page: the stall, the stacks as marked, sparklines, its own Stacks button
    row.locator("button.tony-open-job").click()
    job_page = page.locator(".tony-job-page")
    expect(job_page.locator(".tony-stall")).to_contain_text("stalled since", timeout=30_000)
    marked = job_page.locator(".tony-job-sections .tony-stacks")
    expect(marked).to_contain_text("stacks when the job was marked stalled")
    expect(marked.locator(".tony-stack-odd")).to_have_attribute("data-tasks", "worker:1")
    for task in ("worker:0", "worker:1", "worker:2"):
        task_row = job_page.locator(f".tony-task-table tr[data-task='{task}']")
        expect(
            task_row.locator("svg.tony-spark[data-series='cpu_percent'] polyline")
        ).to_have_count(1)
        expect(task_row.locator("svg.tony-spark[data-series='rss_bytes']")).to_have_count(1)
    job_page.locator(".tony-job-stacks button.tony-stacks-button").click()
    now = job_page.locator(".tony-job-stacks .tony-stacks")
    expect(now).to_contain_text("stacks now: 3 task(s) in 2 group(s)", timeout=60_000)
    expect(now.locator(".tony-stack-odd")).to_have_attribute("data-tasks", "worker:1")
    shot(page, "stall-4-job-page")
    now.scroll_into_view_if_needed()
    shot(page, "stall-5-job-page-stacks-now")

    # killed from the panel: the widget ends, the Stacks buttons go
    page.locator(f".tony-job[data-job-id='{job_id}'] button.tony-kill").click()
    expect(row.locator(".tony-state")).to_have_text("KILLED", timeout=60_000)
    expect(row.locator("button.tony-stacks-button")).to_be_hidden()
    expect(row.locator(".tony-stacks-pane .tony-stack-group")).to_have_count(0)  # gone with it
    expect(row.locator(".tony-stall-mark")).to_be_hidden()


def _print_figures(lab, job_id: str) -> None:
    """What the stall took, for the report: from the last step to the mark, each rank's dump
    then; a Stacks request through the server now, and each rank's dump in it."""
    api, auth = f"{lab['url']}tony/api/jobs/{job_id}", {"token": lab["token"]}
    st = requests.get(api, params=auth, timeout=10).json()["stall"]
    t0 = time.monotonic()
    now = requests.get(f"{api}/stacks", params=auth, timeout=60)
    took = time.monotonic() - t0
    assert now.ok, now.text
    figures = {
        "marked_after_s": round(st["marked"] - st["since"], 2),
        "threshold_s": st["threshold_s"],
        "dump_s": {s["task"]: s["seconds"] for s in st["stacks"]},
        "stacks_request_s": round(took, 3),
        "stacks_request_dump_s": now.json()["seconds"],
    }
    print("\nstall figures: " + json.dumps(figures))
    assert st["threshold_s"] < figures["marked_after_s"] <= st["threshold_s"] + 1.0


def _job_id() -> str:
    jobs = sorted(p.name for p in Path(os.environ["TONY_JUPYTER_HOME"], "jobs").glob("tony_*"))
    return jobs[0]
