"""What the browser tests share besides their fixtures (tests/browser/conftest.py): where
Chromium and the screenshots are, the base_url JupyterLab runs under, a screenshot, a command."""

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
