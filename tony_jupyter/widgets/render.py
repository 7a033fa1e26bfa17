"""Pure functions from a job snapshot to what the widget, the text fallback and the saved
report show. No ipywidgets here, so the report can be built (and tested) anywhere."""

from __future__ import annotations

import html
import math
import time
from collections.abc import Mapping

from ..core import waits
from ..core.protocol import JobSnapshot, JobState, TaskState, fmt_duration
from ..core.protocol import task_id as make_task_id

LIVE_TASK_STATES = (TaskState.REGISTERED, TaskState.RUNNING)
# The ends that are not the one hoped for: shown in red.
BAD_JOB_STATES = (JobState.FAILED, JobState.KILLED, JobState.LOST)

# Mid-tone colours, readable on both light and dark notebook themes.
STATE_COLOURS = {
    "NEW": "#888888",
    "STARTING": "#2f80ed",
    "LAUNCHED": "#2f80ed",
    "REGISTERED": "#2f80ed",
    "RUNNING": "#1e88e5",
    "SUCCEEDED": "#2e9d4f",
    "FAILED": "#d64541",
    "KILLED": "#e67e22",
    "LOST": "#8e44ad",
    "STOPPING": "#e67e22",
    "STOPPED": "#888888",
}
# Progress keys that are bookkeeping, not metrics to print.
PROGRESS_META = ("epoch", "epochs", "step", "steps", "batch", "time", "epoch_done", "total_steps")


def _num(value) -> float | None:
    """A finite number of what the AM stored, or None: renderers never raise on a value a
    task sent (the AM bounds them, protocol.Beat; an older AM did not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except OverflowError:  # a whole number past a float's range
        return None
    return x if math.isfinite(x) else None


def elapsed(snap: JobSnapshot) -> float | None:
    started = _num(snap.started)
    if started is None:
        return None
    end = _num(snap.finished) or _num(snap.now) or time.time()
    return end - started


def chief_progress(snap: JobSnapshot) -> dict:
    """The chief reports the progress that matters; any other task's is a fallback."""
    chief = snap.chief_task
    if chief is not None and chief.progress:
        return chief.progress
    return next((t.progress for t in snap.tasks if t.progress), {})


def progress_fraction(p: dict) -> float | None:
    epochs, epoch = _num(p.get("epochs")), _num(p.get("epoch"))
    total, step = _num(p.get("total_steps")), _num(p.get("step"))
    if total and step is not None and not (epochs and epoch):  # tony_jupyter.report(total_steps=)
        return min(1.0, max(0.0, step / total))
    if not epochs or not epoch:
        return None
    steps, batch, done = _num(p.get("steps")), _num(p.get("batch")), _num(p.get("epoch_done"))
    if done == epoch:
        within = 1.0
    # Reports are merged, so a full batch count while the epoch is not done is the previous
    # epoch's last batch: the new epoch's first one has not come yet.
    elif steps and batch is not None and not (done is not None and batch >= steps):
        within = batch / steps
    else:
        within = 0.0
    return min(1.0, max(0.0, (epoch - 1 + within) / epochs))


def _fmt_value(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)[:200]


def progress_label(p: dict) -> str:
    parts = []
    if p.get("epoch") is not None:
        parts.append(f"epoch {p['epoch']}" + (f"/{p['epochs']}" if p.get("epochs") else ""))
    if p.get("step") is not None:
        parts.append(f"step {p['step']}" + (f"/{p['total_steps']}" if p.get("total_steps") else ""))
    metrics = [k for k in p if k not in PROGRESS_META and p[k] is not None]
    metrics.sort(key=lambda k: k != "loss")  # loss first, the rest in the order reported
    parts += [f"{k} {_fmt_value(p[k])}" for k in metrics]
    return " · ".join(parts)


def task_rows(snap: JobSnapshot) -> list[dict]:
    now = _num(snap.now) or time.time()
    rows = []
    for t in snap.tasks:
        p = t.progress or {}
        beat = _num(t.last_heartbeat)
        # a finished task's silence is expected, so its age would only alarm
        age = round(now - beat, 1) if beat is not None and t.state in LIVE_TASK_STATES else None
        rows.append(
            {
                "task": t.id or make_task_id(t.type, t.index),
                "address": f"{t.host}:{t.port}" if t.host else "",
                "state": str(t.state),
                "heartbeat_age": age,
                "step": p.get("step"),
                "loss": _num(p.get("loss")),
                "cpu_percent": _num(t.cpu_percent),
                "rss_bytes": _num(t.rss_bytes),
                "gpus": [(_num(g.utilization), _num(g.memory_used_mb)) for g in t.gpus],
                "exit_code": t.exit_code,
                # a task's own attempt, shown where it is not the job's (a replaced worker)
                "own_attempt": t.attempt if t.attempt != snap.attempt else None,
            }
        )
    return rows


def attempts_text(snap: JobSnapshot) -> str:
    if not snap.attempts:
        return ""
    last = snap.attempts[-1]
    who = f" ({last.task})" if last.task and last.task not in last.reason else ""
    return f"attempt {last.attempt} ended: {last.reason}{who}"


def status_text(snap: JobSnapshot) -> str:
    """One line: what the header says, for the terminal and text/plain."""
    parts = [f"tony job {snap.job_id}"]
    if snap.name:
        parts[0] += f" ({snap.name})"
    parts.append(str(snap.state))
    if elapsed(snap) is not None:
        parts.append(fmt_duration(elapsed(snap)))
    if snap.attempt:
        parts.append(f"attempt {snap.attempt}/{snap.max_attempts or 1}")
    return " · ".join(parts)


def stall_text(snap: JobSnapshot) -> str:
    """One line when the job is stalled (protocol Stall.text), "" otherwise."""
    st = snap.stall
    return "" if st is None else st.text(snap.now or st.marked, snap.terminal)


def wait_text(snap: JobSnapshot) -> str:
    """One line while a YARN job or some of its containers wait for room in its queue, with
    the RM's figures (protocol QueueWait, waits.py); "" otherwise."""
    return waits.snapshot_wait(snap)


def stall_stacks_text(snap: JobSnapshot) -> str:
    """A stalled job's stacks, as they were gathered when it was marked ("" before)."""
    if snap.stall is None or not snap.stall.stacks:
        return ""
    from ..core.protocol import StacksAnswer
    from ..core.stackgroups import render

    answer = StacksAnswer(0, snap.stall.stacks)
    return "stacks when the job was marked stalled: " + render(answer, snap.stall.behind)


def _state_span(state: str) -> str:
    colour = STATE_COLOURS.get(state, "#888888")
    return f'<b style="color:{colour}">{html.escape(state)}</b>'


def header_html(snap: JobSnapshot, notice: str = "", gpu_idle: str = "") -> str:
    """The job's name, state, time and attempt; its reason, a stall's line, ``gpu_idle`` (the
    GPUs-idle share when it stays high: usage.GpuIdle), its endpoints and ``notice``."""
    e = html.escape
    name = f" {e(snap.name)}" if snap.name else ""
    bits = [
        f"<b>tony</b> <code>{e(snap.job_id)}</code>{name}",
        _state_span(str(snap.state)),
    ]
    if elapsed(snap) is not None:
        bits.append(e(fmt_duration(elapsed(snap))))
    if snap.attempt:
        bits.append(f"attempt {snap.attempt}/{snap.max_attempts or 1}")
    lines = [" · ".join(bits)]
    failed = snap.state in BAD_JOB_STATES
    if snap.reason:
        colour = STATE_COLOURS["FAILED"] if failed else "inherit"
        lines.append(f'<span style="color:{colour}">{e(snap.reason)}</span>')
    if attempts_text(snap) and attempts_text(snap) not in snap.reason:
        lines.append(f"<i>{e(attempts_text(snap))}</i>")
    if stall_text(snap):
        lines.append(
            f'<b class="tony-stall" style="color:{STATE_COLOURS["FAILED"]}">'
            f"{e(stall_text(snap))}</b>"
        )
    if gpu_idle:
        lines.append(
            f'<b class="tony-gpu-idle" style="color:{STATE_COLOURS["KILLED"]}">{e(gpu_idle)}</b>'
        )
    if wait_text(snap):
        lines.append(f'<span style="color:{STATE_COLOURS["STARTING"]}">{e(wait_text(snap))}</span>')
    if snap.endpoints:
        lines.append(endpoints_html(snap.endpoints, snap.job_id))
    lines += [f"<i>{e(notice)}</i>"] if notice else []
    return "<div style='line-height:1.5'>" + "<br>".join(lines) + "</div>"


def endpoints_html(endpoints: dict, job_id: str = "") -> str:
    # Through the server extension's proxy, which resolves job -> endpoint: the browser may not
    # reach the task's host, and no host appears here.
    from ..core.proxyurls import proxy_url

    links = [
        f'<a href="{html.escape(proxy_url(job_id, name))}" target="_blank">{html.escape(name)}</a>'
        for name in sorted(endpoints)
    ]
    return "endpoints: " + " · ".join(links)


def tasks_table_html(
    rows: list[dict], sparks: Mapping[str, Mapping[str, str]] | None = None
) -> str:
    """The task table; ``sparks``: each task's sparklines by series (usage.UsageHistory), drawn
    after the CPU, memory and GPU figures."""
    if not rows:
        return "<i>no tasks yet</i>"
    e = html.escape
    cell = "padding:1px 10px 1px 0;text-align:left"
    head = ["task", "host:port", "state", "heartbeat", "step", "loss", "CPU", "memory", "GPU"]
    head.append("exit")
    out = [
        "<table style='border-collapse:collapse;font-size:90%'><tr>"
        + "".join(f"<th style='{cell}'>{h}</th>" for h in head)
        + "</tr>"
    ]
    for r in rows:
        spark = (sparks or {}).get(r["task"], {})
        age = f"{r['heartbeat_age']:.1f} s ago" if r["heartbeat_age"] is not None else ""
        loss = f"{r['loss']:.4g}" if r["loss"] is not None else ""
        vals = [
            f"<code>{e(r['task'])}</code>"
            + (f" · attempt {r['own_attempt']}" if r.get("own_attempt") else ""),
            e(r["address"]),
            _state_span(r["state"]),
            age,
            "" if r["step"] is None else e(_fmt_value(r["step"])),
            loss,
            ("" if r["cpu_percent"] is None else f"{r['cpu_percent']:.0f}% ")
            + spark.get("cpu", ""),
            ("" if not r["rss_bytes"] else f"{r['rss_bytes'] / 2**20:.0f} MiB ")
            + spark.get("memory", ""),
            " ".join(
                x for x in (gpu_text(r["gpus"]), spark.get("gpu"), spark.get("gpu_memory")) if x
            ),
            "" if r["exit_code"] is None else str(r["exit_code"]),
        ]
        out.append(
            f"<tr data-task='{e(r['task'])}'>"
            + "".join(f"<td style='{cell}'>{v}</td>" for v in vals)
            + "</tr>"
        )
    return "".join(out) + "</table>"


def gpu_text(gpus: list) -> str:
    """``"87% 3.1 GiB"`` per GPU; "" for a task without GPUs (or without nvidia-smi)."""
    return " · ".join(
        ("" if u is None else f"{u:.0f}%") + ("" if m is None else f" {m / 1024:.1f} GiB")
        for u, m in gpus
    )


def tracebacks_html(snap: JobSnapshot) -> str:
    out = []
    for t in snap.tasks:
        if t.traceback:
            out.append(
                f"<div><b>{html.escape(t.id)}</b> raised:</div>"
                f"<pre style='color:{STATE_COLOURS['FAILED']};white-space:pre-wrap;"
                f"margin:2px 0 6px 0'>{html.escape(t.traceback)}</pre>"
            )
    return "".join(out)


def stacks_html(text: str) -> str:
    """The tasks' stacks as ``%tony stacks`` words them (stackgroups.render), in a scrolled
    pane; the groups marked ``>>>`` (the odd ones out, the furthest behind) in red."""
    lines = []
    for line in text.splitlines():
        esc = html.escape(line)
        if line.startswith(">>> "):
            esc = f"<b style='color:{STATE_COLOURS['FAILED']}'>{esc}</b>"
        elif line and not line.startswith(" "):
            esc = f"<b>{esc}</b>"
        lines.append(esc)
    return (
        "<details open><summary>Stacks</summary><div style='max-height:24em;overflow:auto'>"
        f"<pre style='margin:0;font-size:85%;line-height:1.3'>{chr(10).join(lines)}</pre>"
        "</div></details>"
    )


def log_pane_html(lines: list[str], height: str = "18em") -> str:
    # column-reverse keeps the scroll position pinned to the newest line, without any JS
    return (
        f"<div style='max-height:{height};overflow:auto;display:flex;"
        "flex-direction:column-reverse'><pre style='margin:0;font-size:85%;"
        f"line-height:1.3'>{html.escape(chr(10).join(lines))}</pre></div>"
    )


def report_html(
    snap: JobSnapshot,
    logs: dict[str, list[str]],
    tail: int = 50,
    totals: dict[str, int] | None = None,
    chart: str = "",
    sparks: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The saved-notebook view: self-contained HTML that nbconvert and any viewer render."""
    rows = task_rows(snap)
    p = chief_progress(snap)
    parts = [header_html(snap)]
    if p:
        frac = progress_fraction(p)
        pct = f" ({frac:.0%})" if frac is not None else ""
        parts.append(f"<div>{html.escape(progress_label(p))}{pct}</div>")
    parts += [tasks_table_html(rows, sparks), chart, tracebacks_html(snap)]
    states = {r["task"]: r["state"] for r in rows}
    for task_id, lines in logs.items():
        shown = lines[-tail:]
        opened = " open" if task_id == snap.failed_task else ""
        total = max(len(lines), (totals or {}).get(task_id, 0))
        state = html.escape(states.get(task_id, ""))
        summary = (
            f"<code>{html.escape(task_id)}</code> log · {state}"
            f" · last {len(shown)} of {total:,} lines"
        )
        parts.append(
            f"<details{opened}><summary>{summary}</summary>"
            f"{log_pane_html(shown, height='30em')}</details>"
        )
    return (
        "<div class='tony-job-report' style='border-left:3px solid "
        f"{STATE_COLOURS.get(str(snap.state), '#888')};padding-left:8px'>"
        + "".join(parts)
        + "</div>"
    )


def report_text(snap: JobSnapshot) -> str:
    lines = [status_text(snap)]
    if snap.reason:
        lines.append(snap.reason)
    if stall_text(snap):
        lines.append(stall_text(snap))
    if wait_text(snap):
        lines.append(wait_text(snap))
    lines += [f"  {r['task']:<12} {r['state']:<10} {r['address']}" for r in task_rows(snap)]
    return "\n".join(lines)
