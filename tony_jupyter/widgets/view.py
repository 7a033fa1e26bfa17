"""JobView: one live widget per job, from stock ipywidgets, and a text fallback without a kernel.

While the job runs the cell shows the widget. When it ends, the display is replaced by a static
HTML report: nbconvert (and JupyterLab reopening a notebook without its kernel) cannot render a
widget whose state was not saved, but renders text/html everywhere.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import ipywidgets as w

from ..core.protocol import JobSnapshot, JobState
from ..core.shown import terminal_safe
from ..core.usage import UsageHistory
from . import render, tensorboard
from .chart import MetricHistory, chart_html
from .logbuffer import LogBuffer

BAR_MAX = 1000
LOG_RENDER_INTERVAL_S = 0.25  # a chatty task must not resend a 2,000-line pane per chunk


def in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class JobView:
    def __init__(
        self,
        job_id: str,
        on_kill: Callable[[], object] | None = None,
        *,
        on_stacks: Callable[[], str] | None = None,
        mode: str | None = None,
        max_log_lines: int = 2000,
        report_tail: int = 50,
    ):
        """mode: "widget", "text", or None to pick widget inside a kernel at display().
        on_stacks: every running task's stacks as text (the Stacks button)."""
        self.job_id, self.on_kill, self.mode = job_id, on_kill, mode
        self.on_stacks = on_stacks
        self.max_log_lines, self.report_tail = max_log_lines, report_tail
        self.snapshot = JobSnapshot(job_id=job_id)
        self.logs: dict[str, LogBuffer] = {}
        self.report_html: str | None = None  # set by finish()
        self.finished = False
        self._lock = threading.RLock()  # follow() may run in a thread; clicks come on another
        self._handle = None
        self._notice = ""
        self._rendered_at: dict[str, float] = {}
        self._dirty: set[str] = set()
        self._seen: dict[str, object] = {}  # what the text fallback last printed per task / "job"
        self.stacks_text = ""  # the last stacks the Stacks button fetched
        self._stall_stacks = ""  # a stalled job's stacks, as last shown
        self._build()

    # --- widgets ------------------------------------------------------------------------------

    def _build(self) -> None:
        self.header = w.HTML(layout=w.Layout(flex="1 1 auto"))
        self.kill_button = w.Button(
            description="Kill",
            icon="stop",
            button_style="danger",
            disabled=self.on_kill is None,
            tooltip="Kill the job (all its tasks)",
            layout=w.Layout(width="auto", flex="0 0 auto"),
        )
        self.kill_button.on_click(self._kill_clicked)
        self.stacks_button = w.Button(
            description="Stacks",
            icon="align-left",
            disabled=self.on_stacks is None,
            tooltip="Every running task's Python stacks, tasks with the same stacks together",
            layout=w.Layout(width="auto", flex="0 0 auto"),
        )
        self.stacks_button.on_click(self._stacks_clicked)
        self.stacks_html = w.HTML()  # the last stacks asked for (render.stacks_html)
        # tqdm.notebook's layout: label, bar, right-hand figures
        self.progress_label = w.HTML()
        self.progress_bar = w.IntProgress(
            min=0, max=BAR_MAX, value=0, layout=w.Layout(flex="2 1 auto")
        )
        self.progress_right = w.HTML()
        self.tasks_html = w.HTML()
        self.chart = w.HTML()
        self.metric_history = MetricHistory()
        self.usage = UsageHistory()  # each task's recent CPU, memory, GPUs: the sparklines
        self.tracebacks = w.HTML()
        self.panes: dict[str, w.HTML] = {}
        self.tabs = w.Tab()
        self.root = w.VBox(
            [
                w.HBox([self.header, self.stacks_button, self.kill_button]),
                w.HBox([self.progress_label, self.progress_bar, self.progress_right]),
                self.tasks_html,
                self.chart,
                self.tracebacks,
                self.stacks_html,
                self.tabs,
            ]
        )
        self._render()

    def _pane(self, task_id: str) -> w.HTML:
        if task_id not in self.panes:
            self.panes[task_id] = w.HTML()
            self.logs.setdefault(task_id, LogBuffer(self.max_log_lines))
            self.tabs.children = tuple(self.panes.values())
            self.tabs.titles = tuple(self.panes)
        return self.panes[task_id]

    def _render(self) -> None:
        snap = self.snapshot
        self.usage.add(snap)
        self.header.value = render.header_html(snap, self._notice, self.gpu_idle_text)
        p = render.chief_progress(snap)
        self.progress_label.value = render.progress_label(p)
        frac = render.progress_fraction(p)
        succeeded = snap.state == JobState.SUCCEEDED
        if succeeded:
            frac = 1.0
        if frac is not None:
            self.progress_bar.value = round(frac * BAR_MAX)
        self.progress_right.value = f"{frac:.0%}" if frac is not None else ""
        self.progress_bar.bar_style = "success" if succeeded else "danger" if snap.terminal else ""
        sparks = {r["task"]: self.usage.sparklines(r["task"]) for r in self.task_rows}
        self.tasks_html.value = render.tasks_table_html(self.task_rows, sparks)
        self.metric_history.add(p)
        self.chart.value = chart_html(self.metric_history)
        self.tracebacks.value = render.tracebacks_html(snap)
        stall_stacks = render.stall_stacks_text(snap)
        if stall_stacks and stall_stacks != self._stall_stacks:  # attached as it was marked
            self._stall_stacks = stall_stacks
            self.stacks_html.value = render.stacks_html(stall_stacks)
        for row in self.task_rows:
            self._pane(row["task"])
        tb = tensorboard.TAB_TITLE
        if "tensorboard" in snap.endpoints and tb not in self.panes:
            self.panes[tb] = w.HTML(tensorboard.iframe_html(self.job_id))
            self.tabs.children = tuple(self.panes.values())
            self.tabs.titles = tuple(self.panes)
        self._render_logs(force=True)

    def _render_logs(self, force: bool = False) -> None:
        now = time.monotonic()
        for task_id in list(self._dirty):
            if force or now - self._rendered_at.get(task_id, 0) >= LOG_RENDER_INTERVAL_S:
                self._pane(task_id).value = render.log_pane_html(self.logs[task_id].view())
                self._rendered_at[task_id] = now
                self._dirty.discard(task_id)

    # --- model state (what tests and the text fallback read) ---------------------------------

    @property
    def state_text(self) -> str:
        return str(self.snapshot.state)

    @property
    def task_rows(self) -> list[dict]:
        return render.task_rows(self.snapshot)

    @property
    def gpu_idle_text(self) -> str:
        """The job's GPUs-idle share while it stays high (usage.GpuIdle), "" otherwise."""
        idle = self.usage.gpu_idle()
        return idle.text() if idle is not None and idle.high and not self.snapshot.terminal else ""

    @property
    def progress_value(self) -> float | None:
        """The overall fraction done (0..1), or None before the job reports any."""
        return render.progress_fraction(render.chief_progress(self.snapshot))

    @property
    def progress_text(self) -> str:
        return render.progress_label(render.chief_progress(self.snapshot))

    def log_text(self, task_id: str) -> str:
        buf = self.logs.get(task_id)
        return buf.text() if buf else ""

    # --- the API the magic calls ------------------------------------------------------------

    def update(self, snapshot: JobSnapshot) -> None:
        with self._lock:
            if self.finished:
                return
            prev = self.snapshot
            self.snapshot = snapshot
            attempt, before = snapshot.attempt or 0, prev.attempt or 0
            if before and attempt != before:
                self._mark_attempt(snapshot)
            if snapshot.terminal:
                self.kill_button.disabled = True
                self.stacks_button.disabled = True
            self._render()
            self._say_changes()

    def append_log(self, task_id: str, text: str) -> None:
        with self._lock:
            self._pane(task_id)
            done = self.logs[task_id].write(text)
            if self.mode == "text":
                for line in done:
                    self._say(f"[{task_id}] {line}")
            self._dirty.add(task_id)
            self._render_logs()

    def finish(self, snapshot: JobSnapshot) -> None:
        with self._lock:
            if self.finished:
                return
            self.update(snapshot)
            self.finished = True
            self.kill_button.disabled = True
            for task_id, buf in self.logs.items():
                for line in buf.flush():
                    if self.mode == "text":
                        self._say(f"[{task_id}] {line}")
                self._dirty.add(task_id)
            self._render_logs(force=True)
            logs = {tid: list(buf.view()) for tid, buf in self.logs.items()}
            totals = {tid: buf.total for tid, buf in self.logs.items()}
            self.report_html = render.report_html(
                snapshot,
                logs,
                self.report_tail,
                totals,
                chart_html(self.metric_history),
                {r["task"]: self.usage.sparklines(r["task"]) for r in self.task_rows},
            )
            if self.mode == "text":
                self._say(render.report_text(snapshot))
            elif self._handle is not None:
                self._handle.update(self._report_bundle(), raw=True)
                self._close_widgets()

    def display(self) -> None:
        from IPython.display import display

        with self._lock:
            if self.mode is None:
                self.mode = "widget" if in_kernel() else "text"
            if self.mode == "text":
                if self.snapshot.started is not None:  # not the placeholder
                    self._say_changes()
                return
            if self.finished:
                self._handle = display(self._report_bundle(), raw=True, display_id=True)
                return
            bundle = self.root._repr_mimebundle_()
            # what a notebook saved mid-run shows where the widget cannot be rendered
            bundle["text/html"] = (
                f"<i>tony job {self.job_id}: the live view needs its kernel; "
                "the final report replaces it when the job ends.</i>"
            )
            self._handle = display(bundle, raw=True, display_id=True)

    def _report_bundle(self) -> dict:
        return {
            "text/html": self.report_html or "",
            "text/plain": render.report_text(self.snapshot),
        }

    def _repr_mimebundle_(self, **kwargs) -> dict:
        return self._report_bundle() if self.finished else self.root._repr_mimebundle_(**kwargs)

    # --- internals ------------------------------------------------------------------------------

    def _mark_attempt(self, snap: JobSnapshot) -> None:
        why = render.attempts_text(snap)
        line = (
            f"──── attempt {snap.attempt}/{snap.max_attempts or 1}"
            + (f" ({why})" if why else "")
            + " ────"
        )
        for task_id in list(self.logs):
            self.logs[task_id].mark(line)
            self._dirty.add(task_id)
        self._say(f"[job] {line}")

    def _kill_clicked(self, _button=None) -> None:
        if self.on_kill is None:
            return
        self.kill_button.disabled = True
        self.kill_button.description = "Killing…"
        try:
            self.on_kill()
        except Exception as e:  # noqa: BLE001 - the user must see why, and may try again
            self.kill_button.disabled = False
            self.kill_button.description = "Kill"
            self._notice = f"kill failed: {e}"
            self.header.value = render.header_html(self.snapshot, self._notice, self.gpu_idle_text)

    def _stacks_clicked(self, _button=None) -> None:
        """Fetched in a thread (the tasks' sidecars answer within a heartbeat or two): the
        kernel goes on handling the widget's events meanwhile."""
        if self.on_stacks is None:
            return
        self.stacks_button.disabled = True
        self.stacks_button.description = "Stacks…"
        threading.Thread(target=self._fetch_stacks, name="tony-stacks", daemon=True).start()

    def _fetch_stacks(self) -> None:
        assert self.on_stacks is not None
        try:
            text = self.on_stacks()
        except Exception as e:  # noqa: BLE001 - the user must see why, and may try again
            text = f"stacks failed: {e}"
        with self._lock:
            self.stacks_text = text
            self.stacks_html.value = render.stacks_html(text)
            self.stacks_button.description = "Stacks"
            self.stacks_button.disabled = self.finished or self.snapshot.terminal
            if self.mode == "text":
                self._say(text)

    def _close_widgets(self) -> None:
        # the report replaced the view: free the comms and keep the saved widget state small
        for pane in self.panes.values():
            pane.value = ""
        stack = [self.root]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()

    def _say(self, line: str) -> None:
        if self.mode == "text":  # a terminal's (tony-jupyter submit) or a notebook's text
            print(terminal_safe(line), file=sys.stdout, flush=True)

    def _say_changes(self) -> None:
        """Text fallback: print the job's and each task's state when it changes."""
        if self.mode != "text":
            return
        snap = self.snapshot
        job = (snap.state, snap.attempt, snap.reason)
        if self._seen.get("job") != job:
            self._seen["job"] = job
            reason = f" · {snap.reason}" if snap.reason else ""
            self._say(f"[job] {render.status_text(snap)}{reason}")
        for row in self.task_rows:
            seen = (row["state"], row["address"], row["exit_code"], row["own_attempt"])
            if self._seen.get(row["task"]) != seen:
                self._seen[row["task"]] = seen
                where = f" on {row['address']}" if row["address"] else ""
                code = f" (exit {row['exit_code']})" if row["exit_code"] is not None else ""
                own = f" (attempt {row['own_attempt']})" if row["own_attempt"] else ""
                self._say(f"[{row['task']}] {row['state']}{own}{where}{code}")
        waited = snap.waiting.waiting_for if snap.waiting and not snap.terminal else None
        if self._seen.get("waiting", None) != waited:
            self._seen["waiting"] = waited
            if waited:
                self._say(f"[job] {render.wait_text(snap)}")
        stall = (snap.stall.since, bool(snap.stall.stacks)) if snap.stall else None
        if self._seen.get("stall", None) != stall:
            if stall or self._seen.get("stall"):
                self._say(f"[job] {render.stall_text(snap) or 'no longer stalled: steps go on'}")
                if stall and stall[1]:
                    self._say(render.stall_stacks_text(snap))
            self._seen["stall"] = stall
        p = render.chief_progress(snap)
        epoch = p.get("epoch_done", p.get("epoch"))  # once per epoch, with its final metrics
        if p and self._seen.get("epoch") != epoch:
            self._seen["epoch"] = epoch
            self._say(f"[job] {render.progress_label(p)}")
