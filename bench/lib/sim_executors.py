"""``python -m bench.lib.sim_executors URL TOKEN FIRST COUNT SECONDS OUT``: COUNT simulated
executors (tasks worker:FIRST ...) as asyncio HTTP clients on keep-alive connections, doing
what a real executor does: register, long-poll the cluster spec, then heartbeat every
TONY_HEARTBEAT_MS (default 1 s) for SECONDS. Writes the latencies and errors to OUT (JSON)."""

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


async def executor(session, url, job_token, index, until, got) -> None:
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
        return body

    await asyncio.sleep(random.random() * 0.5)  # executors don't start in lockstep either
    body = {"task": task, "attempt": 1, "host": "127.0.0.1", "port": 30000 + index, "pid": index}
    if await call("POST", "executor/register", "register", json=body) is None:
        return
    spec = None
    while spec is None and time.time() < until:
        params = {"task": task, "attempt": 1, "timeout": 30}
        got_spec = await call("GET", "executor/cluster-spec", "cluster_spec", params=params)
        if got_spec is None:
            return
        spec = got_spec["cluster_spec"]
    got["running_at"].append(time.time())
    await asyncio.sleep(random.random() * PERIOD_S)
    while time.time() < until:
        t = time.time()
        progress = {"step": 1, "time": t}
        beat = {"task": task, "attempt": 1, "progress": progress}
        await call("POST", "executor/heartbeat", "heartbeat", json=beat)
        await asyncio.sleep(max(0.0, PERIOD_S - (time.time() - t)))


async def main_async(url, token, first, count, seconds) -> dict:
    got: dict = {
        "register": [],
        "cluster_spec": [],
        "heartbeat": [],
        "errors": [],
        "running_at": [],
    }
    until = time.time() + seconds
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=40)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as s:
        await asyncio.gather(
            *(executor(s, url, token, first + i, until, got) for i in range(count))
        )
    return got


def main() -> int:
    url, token, first, count, seconds, out = sys.argv[1:7]
    got = asyncio.run(main_async(url, token, int(first), int(count), float(seconds)))
    with open(out, "w") as f:
        json.dump(got, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
