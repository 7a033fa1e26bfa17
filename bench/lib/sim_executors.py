"""``python -m bench.lib.sim_executors URL LAUNCHES FIRST COUNT SECONDS OUT [http|stream]``: COUNT
simulated executors (tasks worker:FIRST ...) in one process on one core (each with its launch's
registration secret from LAUNCHES, the FakeProvider's launches.jsonl), doing what a real
executor does: register, beat once by ``POST executor/heartbeat`` (its answer names the stream's
port), open the heartbeat stream (am/beats.py) and beat on it every TONY_HEARTBEAT_MS (default
1 s) with a sidecar's fields (progress, rss, resources), while long-polling the cluster spec;
with ``http`` every beat is a ``POST executor/heartbeat`` on a kept-open connection instead.

Cheap enough per beat for 10,000 executors on one core: raw HTTP/1.1 on asyncio streams for
the few calls of a task's start, an ``asyncio.Protocol`` per stream, and one timer that sends
each 5 ms slot's beats (an executor's slot is its phase in the period). The latency of a beat
is the time from just before its line is written to when its answer is read: a simulator that
falls behind shows it as latency (never hides it), and as ``late`` (how far behind schedule
its timer ran, reported beside the latencies). The HTTP connection of a task's start is closed
once it has the spec (a real executor keeps one: at 10,000 tasks that is 20,000 of the AM's
file descriptors, this box's hard limit). Writes the figures and errors to OUT (JSON)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import sys
import time
from array import array
from collections import deque

PERIOD_S = int(os.environ.get("TONY_HEARTBEAT_MS", "1000")) / 1000
SLOT_S = 0.005
RSS = 512 << 20
STARTING = 1000


def beat_line(t: float) -> bytes:
    return (
        b'{"progress":{"step":%d,"time":%.3f,"loss":0.5},"rss":%d,'
        b'"resources":{"cpu_percent":97.5,"rss_bytes":%d}}\n' % (int(t), t, RSS, RSS)
    )


class Record:
    """What the run saw: latencies with their wall-clock times, errors, the timer's lateness."""

    def __init__(self) -> None:
        self.beat = array("d")  # seconds from send to answer
        self.beat_at = array("d")  # wall clock of the answer
        self.register: list[float] = []
        self.cluster_spec: list[float] = []
        self.errors: list[str] = []
        self.late = array("d")  # per timer slot: how far behind schedule it ran
        self.spec_at: list[float] = []
        self.stalest: list = []
        self.offset = time.time() - time.perf_counter()

    def answered(self, sent: float) -> None:
        now = time.perf_counter()
        self.beat.append(now - sent)
        self.beat_at.append(now + self.offset)


async def http(
    reader, writer, method: str, path: str, token: str, body: dict | None = None, raw=False
):
    """One request on a kept-open connection: (status, JSON answer, or its bytes if raw)."""
    data = json.dumps(body).encode() if body is not None else b""
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: am\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    data = await reader.readexactly(length)
    return status, data if raw else json.loads(data or b"null")


class Stream(asyncio.Protocol):
    """One executor's heartbeat stream: lines out on the timer, answers timed as they come."""

    def __init__(self, rec: Record, task: str) -> None:
        self.rec, self.task = rec, task
        self.sent: deque[float] = deque()
        self.pending = b""
        self.hello: asyncio.Future = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.open = True
        self.last = time.time()  # the last answer's

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            if not self.hello.done():
                self.hello.set_result(line)
                continue
            if b'"error"' in line:
                self.rec.errors.append(f"{self.task} stream: {line[:200]!r}")
                self.open = False
            if self.sent:
                self.rec.answered(self.sent.popleft())
                self.last = time.time()

    def connection_lost(self, exc) -> None:
        self.open = False
        if not self.hello.done():
            self.hello.set_exception(ConnectionError("stream closed"))

    def beat(self, t: float) -> None:
        if self.open and self.transport is not None:
            self.sent.append(time.perf_counter())
            self.transport.write(beat_line(t))


class HttpBeats:
    """The old way, for the baseline: each beat a ``POST executor/heartbeat`` (one at a time)."""

    def __init__(self, rec: Record, task: str, token: str, conn) -> None:
        self.rec, self.task, self.token, self.conn = rec, task, token, conn
        self.busy = False
        self.open = True

    def beat(self, t: float) -> None:
        if self.open and not self.busy:
            self.busy = True
            asyncio.ensure_future(self._post(t))

    async def _post(self, t: float) -> None:
        sent = time.perf_counter()
        body = {"task": self.task, "attempt": 1, **json.loads(beat_line(t))}
        try:
            status, answer = await http(
                *self.conn, "POST", "/api/v1/executor/heartbeat", self.token, body
            )
        except (OSError, asyncio.IncompleteReadError) as e:
            self.rec.errors.append(f"{self.task} heartbeat {type(e).__name__}")
            self.open = False
            return
        if status >= 400:
            self.rec.errors.append(f"{self.task} heartbeat {status}: {str(answer)[:200]}")
            self.open = False
        else:
            self.rec.answered(sent)
        self.busy = False


async def executor(index, host, port, secrets, rec, slots, mode, ramp_s, starting) -> None:
    task = f"worker:{index}"
    await asyncio.sleep(random.random() * ramp_s)  # executors don't start in lockstep either
    async with starting:
        got = await start(index, host, port, await secrets(task), rec, slots, mode)
    if got is None:
        return
    spec_conn, token = got
    try:
        t = time.perf_counter()
        path = f"/api/v1/executor/cluster-spec?task={task}&attempt=1&timeout=30"
        spec = None
        while spec is None:
            # Not parsed: a real executor parses its spec on its own core, and at 10,000 tasks
            # the spec is ~200 KB (10,000 of them here would be the simulator's whole core).
            status, spec = await http(*spec_conn, "GET", path, token, raw=True)
            if status >= 400:
                rec.errors.append(f"{task} cluster-spec {status}: {spec[:200]!r}")
                return
            if not spec.startswith(b'{"cluster_spec": {'):
                spec = None
        rec.cluster_spec.append(time.perf_counter() - t)
        rec.spec_at.append(time.time())
        if mode == "stream":
            spec_conn[1].close()
    except (OSError, asyncio.IncompleteReadError, KeyError, ValueError) as e:
        rec.errors.append(f"{task} {type(e).__name__}: {e}"[:200])


async def start(index, host, port, token, rec, slots, mode):
    """Register, the first heartbeat, the stream: the connection to long-poll the spec on."""
    task = f"worker:{index}"
    try:
        conn = await asyncio.open_connection(host, port)
        t = time.perf_counter()
        reg = {"task": task, "attempt": 1, "host": "127.0.0.1", "port": 30000 + index, "pid": index}
        # The launch's one-time secret buys the task's own token, as a real executor's does.
        status, answer = await http(*conn, "POST", "/api/v1/executor/register", token, reg)
        if status >= 400:
            rec.errors.append(f"{task} register {status}: {str(answer)[:200]}")
            return None
        token = answer["token"]
        rec.register.append(time.perf_counter() - t)
        first = {"task": task, "attempt": 1}
        status, answer = await http(*conn, "POST", "/api/v1/executor/heartbeat", token, first)
        if mode == "stream":
            loop = asyncio.get_running_loop()
            _, beats = await loop.create_connection(
                lambda: Stream(rec, task), host, answer["beats"]
            )
            hello = {"task": task, "attempt": 1, "token": token}
            beats.transport.write(json.dumps(hello).encode() + b"\n")
            if b"ok" not in await beats.hello:
                rec.errors.append(f"{task}: stream refused")
                return None
            slots[random.randrange(len(slots))].append(beats)
            spec_conn = conn
        else:
            slots[random.randrange(len(slots))].append(HttpBeats(rec, task, token, conn))
            spec_conn = await asyncio.open_connection(host, port)  # the beats hold ``conn``
        return spec_conn, token
    except (OSError, asyncio.IncompleteReadError, KeyError, ValueError) as e:
        rec.errors.append(f"{task} {type(e).__name__}: {e}"[:200])
        return None


async def pump(slots: list[list], until: float, rec: Record) -> None:
    """Every slot's beats at their phase in the period, for as long as the run lasts."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    k = 0
    stop = f"{sys.argv[6]}.stop"  # the bench's: its measurement is over
    while time.time() < until and not (k % 200 == 0 and os.path.exists(stop)):
        target = start + k * SLOT_S
        wait = target - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        else:
            rec.late.append(-wait)
            await asyncio.sleep(0)  # let the answers in
        now = time.time()
        for s in slots[k % len(slots)]:
            s.beat(now)
        k += 1


class Launches:
    """The registration secret of each task's launch, as the AM's FakeProvider writes them
    (``launches.jsonl``): read as they come."""

    def __init__(self, path: str) -> None:
        self.path, self.offset, self.known = path, 0, {}

    async def __call__(self, task: str) -> str:
        while task not in self.known:
            try:
                with open(self.path, "rb") as f:
                    f.seek(self.offset)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                launch = json.loads(line)
                self.known[launch["task"]] = launch["secret"]
            self.offset += end
            if task not in self.known:
                await asyncio.sleep(0.05)
        return self.known[task]


async def main_async(url, launches, first, count, seconds, mode) -> Record:
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    secrets = Launches(launches)
    rec = Record()
    until = time.time() + seconds
    slots: list[list] = [[] for _ in range(max(1, round(PERIOD_S / SLOT_S)))]
    ramp_s = max(0.5, count / 2000)
    # Executors in their start at once: a burst beyond what this one core can drive would
    # only queue in the kernel (and time out there), not reach the AM sooner.
    starting = asyncio.Semaphore(STARTING)
    beating = asyncio.ensure_future(pump(slots, until, rec))
    starts = [
        executor(first + i, host, int(port), secrets, rec, slots, mode, ramp_s, starting)
        for i in range(count)
    ]
    await asyncio.gather(*starts)
    # Every executor has started: what that made lives until the end, out of the collector's
    # full passes (as the AM does, main.py), which would stop this loop and read as latency.
    gc.freeze()
    await beating
    streams = [s for slot in slots for s in slot if isinstance(s, Stream)]
    # The longest any stream went unanswered in the run's last phase, by task: a task the AM
    # would find silent shows here.
    rec.stalest = sorted((round(until - s.last, 2), s.task) for s in streams)[-5:]
    return rec


def main() -> int:
    url, launches, first, count, seconds, out = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "stream"
    run = main_async(url, launches, int(first), int(count), float(seconds), mode)
    profile = os.environ.get("TONY_BENCH_SIM_PROFILE")  # cProfile stats to this file
    if profile:
        import cProfile

        with cProfile.Profile() as prof:
            rec = asyncio.run(run)
        prof.dump_stats(profile)
    else:
        rec = asyncio.run(run)
    late = sorted(rec.late)
    got = {
        "heartbeat": rec.beat.tolist(),
        "beat_at": rec.beat_at.tolist(),
        "register": rec.register,
        "cluster_spec": rec.cluster_spec,
        "spec_at": rec.spec_at,
        "errors": rec.errors,
        "late_slots": len(late),
        "late_max_s": late[-1] if late else 0.0,
        "stalest": rec.stalest,
    }
    with open(out, "w") as f:
        json.dump(got, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
