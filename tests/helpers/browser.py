"""What the browser tests share besides their fixtures (tests/browser/conftest.py): where
Chromium and the screenshots are, the base_url JupyterLab runs under, a screenshot, a command,
a notebook opened and its first cells run."""

import contextlib
import os
import socket
from pathlib import Path

CHROMIUM = os.environ.get("TONY_CHROMIUM", "/usr/bin/chromium")
# Screenshots and the server's log: $TONY_SCREENSHOT_DIR, else build/browser/ (the docs' source)
ARTIFACTS = Path(
    os.environ.get("TONY_SCREENSHOT_DIR")
    or Path(__file__).resolve().parents[2] / "build" / "browser"
)
BASE_URL = "/user/tester/"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def command(page, name: str) -> None:
    # not awaited: running a %%tony cell's command resolves only when the cell has finished
    page.evaluate(f"void window.jupyterapp.commands.execute({name!r})")


def run_first_cells(page, lab, notebook: str, count: int):
    """Open ``notebook`` (``count`` cells) in ``lab``, wait for its kernel, run its first two
    cells (the second one's command is not awaited: a %%tony cell's run ends with the cell);
    answers the notebook's cells."""
    from playwright.sync_api import expect

    page.set_default_timeout(60_000)
    page.goto(f"{lab['url']}lab/tree/{notebook}?token={lab['token']}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(count, timeout=120_000)
    page.wait_for_function(
        "window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )
    cells.nth(0).click()
    command(page, "notebook:run-cell-and-select-next")
    command(page, "notebook:run-cell-and-select-next")
    return cells


@contextlib.contextmanager
def shot_on_failure(page, name: str):
    """A full-page screenshot ``name``.png in ARTIFACTS when the block raises."""
    try:
        yield
    except BaseException:
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        raise
