"""Every route of the AM's API declares the protocol records of its request body and its answer
(am/http.py ``BaseHandler.records``), and a real local AM (a session's: it serves every route)
answers each with its record: the routes are read from the application itself, so a route added
without records, or without a call here, fails. A malformed body is a 400 naming its field. The
warm YARN AM's spare routes declare theirs too (tests/am/test_warmroutes.py calls them)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable
from types import SimpleNamespace

import cloudpickle
import pytest
import requests
from helpers.jobs import running
from helpers.tokens import PRINT_OWN_TOKEN, own_token
from tornado import web
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from tests.am.test_coordinator import make
from tony_jupyter.am.api import make_app
from tony_jupyter.am.http import AMState
from tony_jupyter.am.provider import Placement
from tony_jupyter.am.yarn.warmroutes import router
from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.protocol import (
    CellView,
    ErrorAnswer,
    HeartbeatAnswer,
    RegisterAnswer,
    token_verifier,
)
from tony_jupyter.core.records import Record
from tony_jupyter.launcher import local as backend_local
from tony_jupyter.options import parse_job_args
from tony_jupyter.session import session_spec

METHODS = ("get", "post", "put", "delete", "patch")


def routes() -> dict[str, type]:
    """Route pattern (after ``/api/v1/``) -> handler, as the AM's application has them: a
    session's AM (``cells`` set) serves every route there is."""
    app = make_app(SimpleNamespace(cells=object()))  # type: ignore[arg-type]
    out = {}
    for rule in app.wildcard_router.rules:
        pattern = rule.matcher.regex.pattern.removeprefix("/api/v1/").removesuffix("$")
        out[pattern] = rule.target
    return out


def spare_routes() -> dict[str, type]:
    """The warm YARN AM's spare routes, as its router has them."""
    spare_app = router(SimpleNamespace(), web.Application([])).rules[0].target
    return {
        rule.matcher.regex.pattern.removeprefix("/api/v1/").removesuffix("$"): rule.target
        for rule in spare_app.wildcard_router.rules
    }


def methods(handler: type) -> set[str]:
    """The HTTP methods a handler answers (those it defines, not tornado's 405)."""
    return {m.upper() for m in METHODS if getattr(handler, m) is not getattr(web.RequestHandler, m)}


def test_every_route_declares_protocol_records_for_its_body_and_answer():
    found = routes()
    assert {"job", "executor/heartbeat", "cells", "executor/cell-result"} <= set(found)
    spares = spare_routes()
    assert set(spares) == {"spare/job", "spare/hello", "spare/task", "spare/status"}
    for pattern, handler in {**found, **spares}.items():
        assert set(handler.records) == methods(handler), (pattern, handler.records)
        for method, (body, answer) in handler.records.items():
            for record in (body, answer):
                assert issubclass(record, Record), (pattern, method, record)
                assert record.__module__.startswith("tony_jupyter.core.protocol."), (
                    pattern,
                    record,
                )


@pytest.fixture
def session(tony_home):
    _, spec = parse_job_args("--workers 2 --no-tensorboard")
    with running(
        backend_local.submit(session_spec(spec, None), make_bundle("", {})), tony_home, timeout=60
    ) as client:
        yield client


def run_cell(client, source: str) -> CellView:
    cell = client.submit_cell(source, cloudpickle.dumps({}), [], "<routes>")
    assert cell is not None
    deadline = time.monotonic() + 60
    while not (cell := client.cell(cell.id, timeout=1)).done:
        assert time.monotonic() < deadline, cell
    return cell


def test_a_real_am_answers_every_route_with_its_record(session):
    client = session
    assert run_cell(client, PRINT_OWN_TOKEN).state == "SUCCEEDED"  # cell 1
    task = "worker:1"
    as_task = {"Authorization": f"Bearer {own_token(client, task)}"}
    url = f"{client.am_url()}/api/v1/"
    me = {"task": task, "attempt": 1}
    names = base64.b64encode(cloudpickle.dumps({})).decode()

    def job(method: str, path: str, **kw) -> requests.Response:
        return client.session.request(method, url + path, timeout=15, **kw)

    def executor(method: str, path: str, **kw) -> requests.Response:
        return requests.request(method, url + path, headers=as_task, timeout=15, **kw)

    # Per route: its calls, each answered with the route's answer record (or, where this AM
    # can only refuse, the error record, named).
    calls: dict[str, list[tuple[str, Callable[[], requests.Response]]]] = {
        "job": [("GET", lambda: job("GET", "job"))],
        "events": [("GET", lambda: job("GET", "events", params={"since": 0}))],
        "feed": [("GET", lambda: job("GET", "feed", params={"offsets": f"{task}=0,worker:0=5"}))],
        "logs": [("GET", lambda: job("GET", "logs", params={"task": task}))],
        "metrics": [("GET", lambda: job("GET", "metrics"))],
        # Every running task's stacks, dumped by its sidecar (both workers idle in the session)
        "stacks": [("GET", lambda: job("GET", "stacks", params={"timeout": 10}))],
        "executor/stacks": [
            (
                "POST",
                lambda: executor("POST", "executor/stacks", json={**me, "request": 1, "text": ""}),
            )
        ],
        "result": [("GET", lambda: job("GET", "result"))],
        "endpoints": [("POST", lambda: job("POST", "endpoints", json={"name": "web", "url": EP}))],
        "endpoints/([A-Za-z0-9][A-Za-z0-9_-]{0,63})": [
            ("GET", lambda: job("GET", "endpoints/web"))
        ],
        # The local backend has no delegation tokens: 409, as an ErrorAnswer.
        "credentials": [("PUT", lambda: job("PUT", "credentials", json={"tokens": {}}))],
        # A registration secret is spent by the executor that had it: refused, 403.
        "executor/register": [
            (
                "POST",
                lambda: executor("POST", "executor/register", json={**me, "port": 1, "pid": 1}),
            )
        ],
        "executor/cluster-spec": [
            ("GET", lambda: executor("GET", "executor/cluster-spec", params=me))
        ],
        "executor/heartbeat": [
            ("POST", lambda: executor("POST", "executor/heartbeat", json={**me, "rss": 1}))
        ],
        "executor/logs": [
            ("POST", lambda: executor("POST", "executor/logs", json={**me, "text": "hi\n"}))
        ],
        "executor/result": [
            ("POST", lambda: executor("POST", "executor/result", json={**me, "status": "ok"}))
        ],
        "cells": [
            ("POST", lambda: job("POST", "cells", json={"source": SLOW, "names": names})),
            ("GET", lambda: job("GET", "cells")),
        ],
        r"cells/(\d+)": [
            ("GET", lambda: job("GET", "cells/1")),
            ("GET", lambda: job("GET", "cells/1", params={"feed": '{"worker:0": 0}'})),
        ],
        # After cell 2 (POST cells above), which worker:1 has not taken yet
        "executor/next-cell": [
            ("GET", lambda: executor("GET", "executor/next-cell", params={**me, "after": 1})),
        ],
        "executor/cell-result": [
            (
                "POST",
                lambda: executor(
                    "POST", "executor/cell-result", json={**me, "cell": 2, "status": "ok"}
                ),
            )
        ],
        r"cells/(\d+)/interrupt": [("POST", lambda: job("POST", "cells/1/interrupt"))],
        "stop": [("POST", lambda: job("POST", "stop", json={"reason": "routes walked"}))],
        "kill": [("POST", lambda: job("POST", "kill", json={}))],
        "release": [("POST", lambda: job("POST", "release"))],
    }
    # Stacks are the job owner's: a task's own token and a wrong token are refused
    r = executor("GET", "stacks")
    assert r.status_code == 403 and "executor calls only" in r.text, r.text
    wrong = {"Authorization": "Bearer " + "x" * 43}
    r = requests.get(url + "stacks", headers=wrong, timeout=15)
    assert r.status_code == 403 and "wrong job token" in r.text, r.text
    found = routes()
    assert set(calls) == set(found)  # a new route needs its call here
    refused = {"credentials": 409, "executor/register": 403}
    seen: dict[str, dict] = {}
    for pattern, each in calls.items():  # in this order: stop, kill and release come last
        for method, call in each:
            r = call()
            _, answer = found[pattern].records[method]
            if pattern in refused:
                assert r.status_code == refused[pattern], (pattern, r.text)
                assert ErrorAnswer.checked(r.json()).status == refused[pattern]
                continue
            assert r.status_code == 200, (pattern, method, r.text)
            record = answer.checked(r.json())
            assert record.to_json() == r.json(), pattern  # nothing left out or added
            seen[f"{method} {pattern}"] = r.json()
    # What the walk saw is the job's own: the cell the task fetched, the log it shipped, both
    # workers' stacks (in the session's loop, waiting for the next cell)
    stacks = seen["GET stacks"]
    assert [t["task"] for t in stacks["tasks"]] == ["worker:0", "worker:1"], stacks
    assert all("session_loop.py" in t["text"] for t in stacks["tasks"]), stacks
    assert seen["GET executor/next-cell"]["cell"]["id"] == 2
    assert "hi\n" in client.logs(task)[0]
    assert seen["GET feed"]["snapshot"]["job_id"] == client.job_id
    assert set(seen["GET feed"]["logs"]) == {task, "worker:0"}


EP = "http://127.0.0.1:1234/"
SLOW = "import time\ntime.sleep(5)"  # cell 2: still running on worker:1 when it is fetched


MALFORMED = [  # (route, body, sent with a task's token, what the 400 says)
    ("kill", {"reason": 5}, False, "'reason' must be a string"),
    ("cells", {"source": "x"}, False, "body needs 'names'"),
    ("cells", {"source": "x", "names": "", "pull": [1]}, False, "'pull' must be a list"),
    ("endpoints", {"name": "tb"}, False, "body needs 'url'"),
    ("endpoints", {"name": "tb", "url": EP, "key": 7}, False, "'key' must be a string"),
    ("executor/heartbeat", {"task": "worker:1", "attempt": "x"}, True, "'attempt' must be"),
    ("executor/heartbeat", {"task": "worker:1", "attempt": 1, "rss": 2.5}, True, "'rss' must"),
    ("executor/logs", {"task": "worker:1", "attempt": 1, "text": 5}, True, "'text' must be"),
    ("executor/cell-result", {"task": "worker:1", "attempt": 1}, True, "body needs 'status'"),
    ("executor/result", {"task": "worker:1", "attempt": 1, "status": []}, True, "'status'"),
]


def test_a_malformed_body_is_a_400_naming_the_field(session):
    run_cell(session, PRINT_OWN_TOKEN)
    as_task = {"Authorization": f"Bearer {own_token(session, 'worker:1')}"}
    for path, body, task_token, message in MALFORMED:
        url = f"{session.am_url()}/api/v1/{path}"
        if task_token:
            r = requests.post(url, json=body, headers=as_task, timeout=10)
        else:
            r = session.session.post(url, json=body, timeout=10)
        assert r.status_code == 400, (path, body, r.text)
        assert message in ErrorAnswer.checked(r.json()).error, (path, body, r.text)
    assert session.snapshot().state == "RUNNING"  # and the job goes on


def test_register_answers_a_register_answer_whose_token_acts_for_the_task(tmp_path):
    """The one answer a real AM gives only to its own executors (a launch's registration
    secret is spent by the executor that had it): an in-process AM, its launches' secrets."""
    c, provider, _ = make("--workers 1 --no-tensorboard", tmp_path)
    secret = provider.launched[-1][2]["TONY_TOKEN"]
    provider.placement = lambda task, attempt: Placement("127.0.0.1")  # where it "launched" it
    am = AMState(c, token_verifier("t" * 32))

    async def scenario() -> tuple[dict, dict]:
        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(make_app(am))
        server.add_sockets(sockets)
        base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/api/v1/executor/"

        async def post(path: str, token: str, body: dict) -> dict:
            r = await AsyncHTTPClient().fetch(
                base + path,
                method="POST",
                body=json.dumps(body),
                headers={"Authorization": f"Bearer {token}"},
            )
            return json.loads(r.body)

        try:
            me = {"task": "worker:0", "attempt": 1}
            got = await post("register", secret, {**me, "port": 2222, "pid": 1})
            beat = await post("heartbeat", RegisterAnswer.checked(got).token, {**me, "rss": 1})
        finally:
            server.stop()
        return got, beat

    got, beat = asyncio.run(scenario())
    assert RegisterAnswer.checked(got).to_json() == got and got["token"] != secret
    assert HeartbeatAnswer.checked(beat) == HeartbeatAnswer()
    assert c.tasks["worker:0"].port == 2222 and c.state == "RUNNING"
