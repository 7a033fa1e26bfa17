"""``python -m bench.lib.sim_executors URL TOKEN FIRST COUNT SECONDS OUT [http|stream]``: COUNT
simulated executors (tasks worker:FIRST ...) as asyncio HTTP clients on keep-alive connections,
doing what a real executor does: register, long-poll the cluster spec, and from the start heartbeat
every TONY_HEARTBEAT_MS (default 1 s) for SECONDS: by ``POST executor/heartbeat`` (http), or, as the
executor's sidecar does now, on the AM's heartbeat stream (stream, am/beats.py) whose port the
first HTTP heartbeat names. Writes the latencies and errors to OUT (JSON)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time

import aiohttp

from tony_jupyter.protocol import task_token

PERIOD_S = int(os.environ.get("TONY_HEARTBEAT_MS", "1000")) / 1000


async def executor(session, url, job_token, index, until, got, mode) -> None:
    task = f"worker:{index}"
    # Each executor authenticates as its own task, as real ones do.
    auth = {"Authorization": f"Bearer {task_token(job_token, task)}"}

    async def call(method: str, path: str, kind: str, **kw) -> dict | None:
        t = time.perf_counter()
        try:
            async with session.request(method, f"{url}/api/v1/{path}", headers=auth, **kw) as r:
                body = await r.json()
                if r.status >= 400:
                    got["errors"].append(f"{kind} {r.status}: {str(body)[:200]}")
                    return None
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            got["errors"].append(f"{kind} {type(e).__name__}: {e}"[:200])
            return None
        got[kind].append(time.perf_counter() - t)
        if kind == "heartbeat":
            got["beat_at"].append(time.time())
        return body

    await asyncio.sleep(random.random() * 0.5)  # executors don't start in lockstep either
    body = {"task": task, "attempt": 1, "host": "127.0.0.1", "port": 30000 + index, "pid": index}
    if await call("POST", "executor/register", "register", json=body) is None:
        return
    # The sidecar beats from the task's start, while the task waits for the cluster spec.
    beating = asyncio.ensure_future(beats(call, url, auth, task, until, got, mode))
    spec = None
    while spec is None and time.time() < until:
        params = {"task": task, "attempt": 1, "timeout": 30}
        got_spec = await call("GET", "executor/cluster-spec", "cluster_spec", params=params)
        if got_spec is None:
            break
        spec = got_spec["cluster_spec"]
    if spec is not None:
        got["running_at"].append(time.time())
    await beating


async def beats(call, url, auth, task, until, got, mode) -> None:
    await asyncio.sleep(random.random() * PERIOD_S)
    first = await call("POST", "executor/heartbeat", "heartbeat", json={"task": task, "attempt": 1})
    if mode == "stream" and first is not None:
        await stream_beats(url, first["beats"], auth, task, until, got)
        return
    while time.time() < until:
        t = time.time()
        progress = {"step": 1, "time": t}
        beat = {"task": task, "attempt": 1, "progress": progress}
        await call("POST", "executor/heartbeat", "heartbeat", json=beat)
        await asyncio.sleep(max(0.0, PERIOD_S - (time.time() - t)))


async def stream_beats(url, port, auth, task, until, got) -> None:
    host = url.split("//", 1)[1].rsplit(":", 1)[0]
    token = auth["Authorization"].split(" ", 1)[1]
    try:
        reader, writer = await asyncio.open_connection(host, port)
        hello = {"task": task, "attempt": 1, "token": token}
        writer.write(json.dumps(hello).encode() + b"\n")
        if "ok" not in json.loads(await reader.readline()):
            got["errors"].append(f"stream refused for {task}")
            return
        while time.time() < until:
            t = time.time()
            start = time.perf_counter()
            beat = {"progress": {"step": 1, "time": t}}
            writer.write(json.dumps(beat).encode() + b"\n")
            answer = json.loads(await reader.readline())
            if "error" in answer:
                got["errors"].append(f"heartbeat stream: {answer}"[:200])
                return
            got["heartbeat"].append(time.perf_counter() - start)
            got["beat_at"].append(time.time())
            await asyncio.sleep(max(0.0, PERIOD_S - (time.time() - t)))
        writer.close()
    except (OSError, ValueError) as e:
        got["errors"].append(f"heartbeat stream {type(e).__name__}: {e}"[:200])


async def main_async(url, token, first, count, seconds, mode) -> dict:
    got: dict = {
        "register": [],
        "cluster_spec": [],
        "heartbeat": [],
        "beat_at": [],
        "errors": [],
        "running_at": [],
    }
    until = time.time() + seconds
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=40)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as s:
        await asyncio.gather(
            *(executor(s, url, token, first + i, until, got, mode) for i in range(count))
        )
    return got


def main() -> int:
    url, token, first, count, seconds, out = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "http"
    got = asyncio.run(main_async(url, token, int(first), int(count), float(seconds), mode))
    with open(out, "w") as f:
        json.dump(got, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
