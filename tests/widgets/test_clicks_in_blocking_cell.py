"""Clicks on the widget's Stacks and Kill buttons reach a real kernel while a blocking ``%%tony``
cell runs (the kernel must handle comm messages while the cell waits for its job)."""

from __future__ import annotations

import queue
import time

from jupyter_client.manager import start_new_kernel

CELL = """%%tony --workers 1
import time
for _ in range(600):
    time.sleep(0.1)
"""


def _iopub_until(kc, found, what: str, timeout: float = 60):
    """The first of ``found(msg)``'s answers that is not None, from the kernel's iopub."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        got = found(msg)
        if got is not None:
            return got
    raise AssertionError(f"no {what} within {timeout} s")


def _buttons(kc) -> dict[str, str]:
    """The comm ids of the Stacks and Kill buttons the running cell displayed."""
    ids: dict[str, str] = {}

    def button(msg):
        if msg["msg_type"] == "comm_open":
            state = msg["content"].get("data", {}).get("state", {})
            if state.get("_model_name") == "ButtonModel":
                ids[state["description"]] = msg["content"]["comm_id"]
        return ids if {"Stacks", "Kill"} <= ids.keys() else None

    return _iopub_until(kc, button, "Stacks and Kill buttons")


def _click(kc, comm_id: str) -> None:
    # the message JupyterLab's ButtonView sends on a click
    kc.session.send(
        kc.shell_channel.socket,
        "comm_msg",
        {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}},
    )


def _stacks_shown(msg):
    if msg["msg_type"] == "comm_msg":
        value = msg["content"]["data"].get("state", {}).get("value", "")
        # the worker's main thread, in the cell's line 3 (its time.sleep)
        if "<b>worker:0</b>" in value and "&lt;tony-cell&gt;&quot;, line 3" in value:
            return value
    return None


def test_stacks_and_kill_clicks_are_handled_while_a_blocking_cell_runs(tony_home, tmp_path):
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    km, kc = start_new_kernel(cwd=str(notebook))
    try:
        kc.execute_interactive("%load_ext tony_jupyter", timeout=60)
        msg_id = kc.execute(CELL)
        buttons = _buttons(kc)
        time.sleep(1)  # the worker's loop is running
        _click(kc, buttons["Stacks"])
        _iopub_until(kc, _stacks_shown, "worker:0's stacks in the widget")
        _click(kc, buttons["Kill"])
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=30)
        content = reply["content"]
        assert content["status"] == "error", content
        assert "KILLED" in content["evalue"] + "".join(content["traceback"]), content
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
