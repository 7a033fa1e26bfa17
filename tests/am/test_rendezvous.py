"""The cluster-spec long-poll at scale (am/http.py ``turned``): a waiter looks again only when
the job's course changes, not on each registration or heartbeat, and every waiter, a late
joiner too, gets the spec; the snapshot built straight from the task records (am/views.py) is
the one the records' own JSON form gives. An in-process AM (tornado on 127.0.0.1)."""

import asyncio
import json
from dataclasses import asdict

from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from tests.am.test_coordinator import make, register_all
from tony_jupyter.am.api import make_app
from tony_jupyter.am.http import WAKE_BATCH, AMState, Waiters
from tony_jupyter.core.protocol import JobSnapshot, Resources, TaskView, token_verifier

TOKEN = "t" * 32
_OWN: dict[str, str] = {}  # registration secret -> the task's own token
_SERVED: dict[int, object] = {}  # port -> the coordinator served there


def own_token(c, task: str) -> str:
    """``task``'s own token, as executor/register answers it: its latest launch's
    registration secret (from the launch's environment) redeemed."""
    secret = [env["TONY_TOKEN"] for tid, _, env in c.provider.launched if tid == task][-1]
    if secret not in _OWN:
        _OWN[secret] = c.credentials.redeem(secret.encode())
    return _OWN[secret]


async def serve(c):
    am = AMState(c, token_verifier(TOKEN))
    looks = []
    answer = am.cluster_spec_answer

    def counted():
        looks.append(c.cluster_spec is not None)
        return answer()

    am.cluster_spec_answer = counted  # type: ignore[method-assign]
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(make_app(am))
    server.add_sockets(sockets)
    _SERVED[sockets[0].getsockname()[1]] = c
    return server, sockets[0].getsockname()[1], looks


async def get_spec(port, task, attempt=1):
    auth = {"Authorization": f"Bearer {own_token(_SERVED[port], task)}"}
    url = f"http://127.0.0.1:{port}/api/v1/executor/cluster-spec?task={task}&attempt={attempt}"
    try:
        r = await AsyncHTTPClient().fetch(url + "&timeout=20", headers=auth, request_timeout=30)
    except HTTPClientError as e:
        return e.code, json.loads(e.response.body)
    return r.code, json.loads(r.body)


def test_waiters_look_again_only_when_the_spec_is_out_and_all_get_it(tmp_path):
    c, _, clock = make("--workers 4 --no-tensorboard", tmp_path)

    async def scenario():
        server, port, looks = await serve(c)
        waiters = [asyncio.ensure_future(get_spec(port, f"worker:{i}")) for i in range(3)]
        while len(looks) < 3:  # each has looked once and waits
            await asyncio.sleep(0.01)
        for i in range(3):
            c.register(f"worker:{i}", 1, "h", 100 + i, i)
            for _ in range(5):
                clock.t += 1
                c.heartbeat(f"worker:{i}", 1, {"step": 1, "time": clock.t})
            await asyncio.sleep(0.05)  # a woken waiter would have looked by now
        assert looks == [False] * 3  # 3 registrations, 15 heartbeats: no waiter woke
        c.register("worker:3", 1, "h", 103, 3)
        got = await asyncio.gather(*waiters)
        late = await get_spec(port, "worker:3")  # asks after the spec went out
        server.stop()
        return got, late, looks

    got, late, looks = asyncio.run(scenario())
    spec = {"worker": ["h:100", "h:101", "h:102", "h:103"]}
    assert got == [(200, {"cluster_spec": spec})] * 3 and late == (200, {"cluster_spec": spec})
    assert looks == [False] * 3 + [True] * 4


def test_a_waiter_whose_attempt_ends_is_told_to_stop(tmp_path):
    c, _, _ = make("--workers 2 --no-tensorboard", tmp_path)

    async def scenario():
        server, port, looks = await serve(c)
        waiter = asyncio.ensure_future(get_spec(port, "worker:0"))
        while not looks:
            await asyncio.sleep(0.01)
        c.register("worker:1", 1, "h", 1, 1)
        c.on_exit("worker:1", 1, 1)  # the attempt fails (no attempts left: the job fails)
        got = await waiter
        server.stop()
        return got

    code, body = asyncio.run(scenario())
    assert code == 410 and body["command"] == "stop"


def test_the_snapshot_is_the_records_own_json_form(tmp_path):
    c, _, clock = make("--workers 2 --ps 1 --conf tony.application.num-retries=1", tmp_path)
    register_all(c)
    gpu = {"index": 0, "utilization": 50.0, "memory_used_mb": 10.0, "extra": 1}
    resources = Resources.parse({"cpu_percent": 12.5, "gpus": [gpu]})
    c.heartbeat("worker:0", 1, {"step": 3, "time": 5.0, "loss": 0.25}, 1 << 20, resources)
    c.on_exit("worker:1", 1, 3, "it broke")  # attempt 2 starts
    c.register("worker:0", 2, "h2", 7, 7)
    clock.t += 1
    got = c.snapshot_json()
    tasks = tuple(TaskView.from_json(asdict(t)) for t in c.tasks.values())
    attempts = tuple(c.attempt_history)
    want = JobSnapshot(
        job_id=c.job_id,
        name=c.spec.name,
        backend=c.spec.backend,
        state=c.state,
        reason=c.reason,
        failed_task=c.failed_task,
        attempt=c.attempt,
        max_attempts=c.spec.max_attempts,
        attempts=attempts,
        started=c.started_at,
        finished=c.finished_at,
        now=clock.t,
        endpoints=dict(c.endpoints),
        chief=c.spec.chief_id,
        tasks=tasks,
    ).to_json()
    assert json.loads(json.dumps(got)) == want
    assert c.snapshot().to_json() == want


def test_many_waiters_are_woken_in_batches_between_which_the_loop_reads_sockets():
    n = 3 * WAKE_BATCH + 1

    async def scenario():
        waiters = Waiters()
        passes, woken_at = [0], []

        async def waiter():
            await waiters.wait(10)
            woken_at.append(passes[0])

        def count_pass():  # runs once per pass of the loop, as a socket's reading would
            passes[0] += 1
            if len(woken_at) < n:
                asyncio.get_running_loop().call_soon(count_pass)

        tasks = [asyncio.ensure_future(waiter()) for _ in range(n)]
        await asyncio.sleep(0.01)
        waiters.notify_all()
        count_pass()
        await asyncio.gather(*tasks)
        late = await asyncio.gather(waiters.wait(0.01))  # no turn: it times out, unharmed
        return woken_at, late

    woken_at, late = asyncio.run(scenario())
    assert len(woken_at) == n and late == [None]
    assert len(set(woken_at)) >= 4  # 4 batches, in 4 different passes of the loop
    assert max(woken_at.count(p) for p in set(woken_at)) <= WAKE_BATCH
