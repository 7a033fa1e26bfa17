"""What a task sends the AM is read as a typed record with bounds (issue 42, finding 1): every
executor→AM route's body, and a heartbeat stream's line, fuzzed field by field (wrong types,
sizes, NaN and infinities, unicode, nesting) against an in-process AM on 127.0.0.1. A malformed
field is a 400 naming it, never a 500, never stored; what the AM stores stays JSON and its
renderers never raise on it."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import fields

import pytest
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from tests.am.test_coordinator import make, register_all
from tony_jupyter.am.api import make_app
from tony_jupyter.am.beats import serve_beats
from tony_jupyter.am.http import AMState
from tony_jupyter.am.provider import Placement
from tony_jupyter.am.sessioncells import CellQueue
from tony_jupyter.core.protocol import (
    Beat,
    CellResultRequest,
    EndpointRequest,
    GpuUse,
    HeartbeatRequest,
    JobSnapshot,
    LogBatch,
    RegisterRequest,
    Resources,
    ResultRequest,
    StacksReport,
    clean_progress,
    token_verifier,
)
from tony_jupyter.core.records import Record
from tony_jupyter.widgets import render

TOKEN = "t" * 32
TASK = "worker:0"
ME = {"task": TASK, "attempt": 1}

# Values as JSON text: sent raw, so that NaN, Infinity and 1e400 reach the AM as Python's json
# reads them.
VALUES = [
    '"x"', '""', "true", "false", "null", "0", "-1", "1.5", "-0.0", "NaN", "Infinity",
    "-Infinity", "1e400", "-1e400", "1e-400", str(2**63), "9" * 400, "[]", "[1, 2]",
    '["x", null]', "{}", '{"a": 1}', '{"a": {"b": [NaN]}}', "[" * 50 + "]" * 50,
    "[" * 100_000 + "]" * 100_000, '"\\u0000"', '"\\ud800"', '"\\udfff x"', '"\\u202e\\u0007"',
    '"\\u00e9\\u4e2d\\ud83d\\ude00"', '"' + "x" * 70_000 + '"', '"worker:1"', '"worker:0"',
    '"../../etc/passwd"', "12345678901234567890.5",
]  # fmt: skip

# Each route a task calls with a body: a valid body, and the paths to fuzz in it (its record's
# fields, so a field added later is fuzzed too, and the nested ones a task fills).
ROUTES: dict[str, tuple[type[Record], dict]] = {
    "executor/register": (RegisterRequest, {**ME, "port": 2222, "pid": 1}),
    "executor/heartbeat": (
        HeartbeatRequest,
        {
            **ME,
            "progress": {"step": 1, "loss": 0.5, "time": 1000.0, "note": "ok"},
            "rss": 1 << 20,
            "resources": {
                "cpu_percent": 50.0,
                "rss_bytes": 1 << 20,
                "gpus": [
                    {
                        "index": 0,
                        "utilization": 10.0,
                        "memory_used_mb": 1.0,
                        "memory_total_mb": 2.0,
                    },
                ],
            },  # fmt: skip
            "credentials": 0,
        },
    ),
    "executor/logs": (LogBatch, {**ME, "text": "a line\n"}),
    "executor/result": (ResultRequest, {**ME, "status": "ok"}),
    "executor/stacks": (
        StacksReport,
        {**ME, "request": 1, "text": "Thread 0x1 (most recent call first):\n", "seconds": 0.06},
    ),
    "executor/cell-result": (CellResultRequest, {**ME, "status": "ok", "cell": 1}),
    "endpoints": (EndpointRequest, {"name": "web", "url": "http://127.0.0.1:7000/"}),
    "beats": (Beat, {"progress": {"step": 1, "time": 1000.0}, "rss": 1}),  # the stream's line
}
NESTED = {
    "progress": ["progress.step", "progress.time", "progress.loss", "progress.new"],
    "resources": [
        "resources.cpu_percent", "resources.rss_bytes", "resources.gpus",
        "resources.gpus.0", "resources.gpus.0.index", "resources.gpus.0.utilization",
        "resources.gpus.0.memory_used_mb",
    ],
}  # fmt: skip
OK_STATUSES = {200, 400, 403, 404, 409, 410, 413}
WHOLE = ("nested too deeply", "line too long", "body over")  # refusals of the whole body


def paths(record: type[Record], body: dict) -> list[str]:
    out = []
    for f in fields(record):  # type: ignore[arg-type]
        out.append(f.name)
        out += [p for p in NESTED.get(f.name, []) if p.split(".")[0] in body]
    return out


def put(body: dict, path: str, raw: str) -> str:
    """``body`` as JSON text with the value at ``path`` replaced by ``raw`` (JSON text)."""
    marker = "\x00FUZZ\x00"
    body = json.loads(json.dumps(body))
    *parents, last = path.split(".")
    at: object = body
    for p in parents:
        at = at[int(p)] if isinstance(at, list) else at[p]  # type: ignore[index]
    if isinstance(at, list):
        at[int(last)] = marker
    else:
        at[last] = marker  # type: ignore[index]
    return json.dumps(body).replace(json.dumps(marker), raw)


def cases(route: str) -> list[tuple[str, str]]:
    record, body = ROUTES[route]
    out = [(path, put(body, path, raw)) for path in paths(record, body) for raw in VALUES]
    out += [("", raw) for raw in VALUES]  # the body itself not an object
    out += [("", json.dumps(body))]
    return out


def stored_json_is_strict(c) -> dict:
    snap = c.snapshot_json()
    snap = json.loads(snap) if isinstance(snap, (str, bytes)) else snap
    json.dumps(snap, allow_nan=False)  # JSON has no NaN: a browser's JSON.parse refuses it
    json.dumps(c.metrics.to_json(), allow_nan=False)
    return snap


def renders(snap: JobSnapshot) -> None:
    render.report_html(snap, {t.id: ["a line"] for t in snap.tasks})
    render.report_text(snap)
    render.status_text(snap)
    render.progress_label(render.chief_progress(snap))
    render.progress_fraction(render.chief_progress(snap))


def test_fuzz_every_route_a_task_calls_no_500_nothing_malformed_stored(tmp_path, capsys):
    c, provider, clock = make("--workers 2 --no-tensorboard", tmp_path)
    register_all(c)
    provider.placement = lambda task, attempt: Placement("127.0.0.1")
    am = AMState(c, token_verifier(TOKEN))
    am.cells = CellQueue(c)
    token = c.credentials.redeem(
        [env["TONY_TOKEN"] for tid, _, env in provider.launched if tid == TASK][-1].encode()
    )
    counts: dict[str, int] = {}
    refused: dict[str, int] = {}

    async def scenario() -> None:
        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(make_app(am))
        server.add_sockets(sockets)
        beats = await serve_beats(am, "127.0.0.1")
        base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/api/v1/"
        try:
            for route in ROUTES:
                for path, text in cases(route):
                    clock.t += 1
                    if route == "beats":
                        status, error = await beat_line(am.beat_port, token, text)
                    else:
                        secret = c.credentials.issue(TASK, 1)  # register: a launch's, unspent
                        auth = secret if route == "executor/register" else token
                        status, error = await post(base + route, auth, text)
                    assert status in OK_STATUSES, (route, path, text[:200], status, error)
                    if status == 400 and path and not any(w in error for w in WHOLE):
                        assert path.split(".")[0] in error.lower(), (route, path, text[:200], error)
                    counts[route] = counts.get(route, 0) + 1
                    refused[route] = refused.get(route, 0) + (status == 400)
                    snap = stored_json_is_strict(c)
                renders(JobSnapshot.from_json(snap))
        finally:
            server.stop()
            beats.close()

    asyncio.run(scenario())
    with capsys.disabled():
        print("\nfuzz cases per route (400s):", {r: (n, refused[r]) for r, n in counts.items()})
    assert all(counts[r] >= 100 for r in ROUTES) and sum(counts.values()) > 2000
    # Whatever came, what the AM holds of worker:0 is of its type, and its progress time finite.
    task = JobSnapshot.from_json(stored_json_is_strict(c)).task(TASK)
    assert task is not None and math.isfinite(float(task.progress.get("time", 0)))
    assert all(isinstance(g, GpuUse) and isinstance(g.utilization, float) for g in task.gpus)


async def post(url: str, token: str, text: str) -> tuple[int, str]:
    r = await AsyncHTTPClient().fetch(
        url,
        method="POST",
        body=text.encode("utf-8", "surrogatepass"),
        headers={"Authorization": f"Bearer {token}"},
        raise_error=False,
        request_timeout=30,
    )
    try:
        return r.code, json.loads(r.body).get("error", "") if r.body else ""
    except ValueError:
        return r.code, r.body.decode(errors="replace")


async def beat_line(port: int | None, token: str, text: str) -> tuple[int, str]:
    """One heartbeat on a new stream: the answer's status (200 for an answer that is not an
    error) and its error."""
    assert port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    try:
        writer.write(json.dumps({**ME, "token": token}).encode() + b"\n")
        assert json.loads(await reader.readline()) == {"ok": True}
        writer.write(text.encode("utf-8", "surrogatepass") + b"\n")
        line = await asyncio.wait_for(reader.readline(), 10)
        if not line:
            return 0, "the stream closed without an answer"
        got = json.loads(line)
        return got.get("status", 200), got.get("error", "")
    finally:
        writer.close()


# --- the rules, one by one -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"progress": {"time": "abc"}}, "'progress"),
        ({"progress": {"time": 1e400}}, "'progress"),
        ({"progress": {"time": -5}}, "'progress.time'"),
        ({"progress": {"loss": float("nan")}}, "'progress"),
        ({"progress": {"x": "y" * 5000}}, "'progress.x'"),
        ({"progress": {str(i): i for i in range(300)}}, "'progress'"),
        ({"progress": {"nested": {"a": 1}}}, "'progress'"),
        ({"resources": {"gpus": [{"index": 0, "utilization": "x"}]}}, "'resources'"),
        ({"resources": {"gpus": [{"index": 0, "utilization": 1e400}]}}, "'resources'"),
        ({"resources": {"gpus": [{"index": -1}]}}, "'index'"),
        ({"resources": {"cpu_percent": float("inf")}}, "'resources'"),
        ({"rss": -1}, "'rss'"),
    ],
)
def test_a_beat_out_of_its_bounds_is_refused_naming_the_field(body, message):
    with pytest.raises(ValueError, match=message):
        Beat.parse(body)


def test_what_a_task_reports_is_kept_within_the_bounds_the_am_checks():
    wild = {"loss": float("nan"), "acc": float("inf"), "x": "y" * 5000, "obj": object(),
            "time": "late", "big": 10**30, **{f"k{i}": i for i in range(400)}}  # fmt: skip
    clean = clean_progress(wild)
    Beat.parse({"progress": clean})  # the AM takes it
    assert clean["loss"] == "nan" and clean["acc"] == "inf" and len(clean["x"]) == 1024
    assert "time" not in clean and "big" not in clean


def test_a_heartbeats_resources_are_a_typed_record():
    beat = Beat.parse({"resources": {"cpu_percent": 5, "gpus": [{"index": 1}]}})
    assert beat.resources == Resources(cpu_percent=5, gpus=(GpuUse(1),))


def test_a_progress_stamped_far_ahead_does_not_freeze_the_tasks_progress(tmp_path):
    c, _, clock = make("--workers 1 --no-tensorboard", tmp_path)
    register_all(c)
    c.heartbeat(TASK, 1, {"step": 1, "time": 9e10})  # the year 4822
    c.heartbeat(TASK, 1, {"step": 2, "time": clock.t})
    assert c.tasks[TASK].progress["step"] == 2


def test_the_renderers_never_raise_on_what_an_older_am_stored():
    task = {"id": TASK, "type": "worker", "index": 0, "tracked": True, "state": "RUNNING",
            "host": "h", "port": 1, "rss_bytes": "lots", "cpu_percent": "x",
            "gpus": [{"index": 0, "utilization": "x", "memory_used_mb": [1]}],
            "progress": {"epoch": "e", "epochs": {}, "step": [1], "loss": "nan",
                         "time": float("inf"), "total_steps": 10**400 // 10**390}}  # fmt: skip
    snap = JobSnapshot.from_json({"job_id": "j", "state": "RUNNING", "now": 1e400,
                                  "started": "x", "tasks": [task], "chief": TASK})  # fmt: skip
    renders(snap)
    assert "lots" not in render.report_html(snap, {})  # a value not a number: left out


def test_a_view_that_fails_does_not_lose_the_jobs_value(shell, tony_home, monkeypatch, capsys):
    """The one real case: the job's view raises on what it is given (as main's did on a GPU
    sample ``"utilization": "x"``); the job succeeds and its value still reaches the cell."""
    from tony_jupyter.widgets.view import JobView

    def broken(self, snapshot):
        raise ValueError("Unknown format code 'f' for object of type 'str'")

    monkeypatch.setattr(JobView, "update", broken)
    assert shell.run_cell_magic("tony", "--workers 1 --no-tensorboard", "41 + 1") == 42
    assert "failed (Unknown format code" in capsys.readouterr().out
