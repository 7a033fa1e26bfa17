"""The server extension against YARN jobs, what only YARN does (the REST API and proxy tests of
tests/server_ext/test_server_api.py and TensorBoard's end with the chief run on YARN too, as
backend contract tests): the application's tracking URL leads to TensorBoard through the RM's
web proxy, whose log dir is in the chief's own container, and scalars written there show
through both proxies while the job runs."""

import json
import os
import re
import statistics
import time

import pytest
import requests
from helpers.jobs import fetch_json, submit, tensorboard_processes, wait_for
from tornado.httpclient import HTTPClientError

pytest_plugins = ["pytest_jupyter.jupyter_server"]
pytestmark = pytest.mark.yarn

# Trains with tony_jupyter.progress() (its scalars go to tensorboard_dir()), then, for the delay
# figures, until the test kills the job: a log line stamped with the wall clock every 0.1 s and a
# probe scalar (TensorBoard keeps its wall time) every 0.5-1.5 s (at random, so the samples do not
# keep one phase to TensorBoard's 1 s reload).
TRAIN = """
import os, random, time
import numpy as np
import tensorflow as tf
import tony_jupyter

model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.random.rand(256, 4).astype("float32")
model.fit(x, x.sum(axis=1), batch_size=32, epochs=3, verbose=0,
          callbacks=[tony_jupyter.progress()])
print("trained in", os.getcwd(), flush=True)
probe = tf.summary.create_file_writer(os.path.join(tony_jupyter.tensorboard_dir(), "probe"))
next_scalar = 0.0
for i in range(6000):
    if time.time() >= next_scalar:
        with probe.as_default():
            tf.summary.scalar("probe", float(i), step=i)
        probe.flush()
        next_scalar = time.time() + random.uniform(0.5, 1.5)
    print(f"probe {time.time():.3f}", flush=True)
    time.sleep(0.1)
"""
TB_SAMPLES, LOG_SAMPLES = 15, 150
POLL_S = 0.05


def _relative_assets(page: str) -> list[str]:
    """The scripts and stylesheets TensorBoard's index page loads, by relative URL."""
    refs = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', page)
    return [r for r in refs if not re.match(r"^[a-z]+:|^/", r)]


async def test_tensorboard_on_yarn_through_the_tracking_url_and_the_proxy(
    jp_fetch, tony_home, cluster
):
    client = submit("--workers 1", TRAIN, {})
    app_id = client.job_id
    try:
        url = wait_for(lambda: client.snapshot().endpoints.get("tensorboard"), 240, "the endpoint")
        # One-click TensorBoard: the tracking URL is the RM's web proxy, which now leads to
        # TensorBoard (it led to the AM's API before the chief registered TensorBoard).
        tracking = cluster.app(app_id)["trackingUrl"]
        assert tracking.endswith(f"/proxy/{app_id}/"), tracking
        # TensorBoard's own port answers only its guard's credentials (the RM's proxy comes in
        # under a secret path, which the tracking URL carries).
        plain = requests.get(url + "data/runs", timeout=10)
        assert plain.status_code == 403 and "open it through Jupyter" in plain.text
        runs = wait_for(
            lambda: _json_or_none(requests.get(tracking + "data/runs", timeout=10)),
            60,
            "TensorBoard behind the tracking URL",
        )
        assert isinstance(runs, list)
        page = requests.get(tracking, timeout=10)
        assert page.ok and 'name="tb-relative-root" content="./"' in page.text
        assets = _relative_assets(page.text)
        assert assets, page.text[:500]
        for asset in assets:  # relative URLs: TensorBoard works under /proxy/<app>/
            assert requests.get(tracking + asset, timeout=30).ok, asset

        rows = {j["job_id"]: j for j in (await fetch_json(jp_fetch, "tony", "api", "jobs"))["jobs"]}
        assert rows[app_id]["backend"] == "yarn" and rows[app_id]["endpoints"] == ["tensorboard"]

        # Its log dir is in the chief's own container, where progress() writes.
        snap = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id)
        chief = next(t for t in snap["tasks"] if t["id"] == snap["chief"])
        log = wait_for(lambda: _tb_line(client.logs("worker:0")[0]), 60, "TensorBoard's line")
        logdir = log.split("(logdir ", 1)[1].split(")", 1)[0]
        assert chief["container"] and f"/{chief['container']}/tensorboard" in logdir, logdir

        # Scalars from progress() through the server extension's proxy, while the job runs.
        tags_path = ("tony", "proxy", app_id, "tensorboard", "data", "plugin", "scalars", "tags")
        tags = await _wait_async(
            lambda: _tags_with(jp_fetch, tags_path, "epoch_loss", "batch_loss"), 240, "the scalars"
        )
        # (Epoch 1's epoch_loss, at step 8, comes before the first batch_loss, at step 10.)
        assert {"epoch_loss", "batch_loss"} <= set(tags["train"])
        assert client.snapshot().state == "RUNNING"  # live, not after the fact
        via_rm = requests.get(tracking + "data/plugin/scalars/tags", timeout=10).json()
        assert "epoch_loss" in via_rm["train"]

        await _print_delays(jp_fetch, app_id)
        killed = await fetch_json(
            jp_fetch, "tony", "api", "jobs", app_id, "kill", method="POST", body=""
        )
        assert killed["killed"] is True
        wait_for(lambda: client.snapshot().terminal, 60, "the job's end")
    finally:
        client.kill()
        client.release()
        assert client.wait_am_exit(30)
    # The application is over: the API answers from the record the client kept.
    snap = await fetch_json(jp_fetch, "tony", "api", "jobs", app_id)
    assert snap["state"] == "KILLED"
    logs = await fetch_json(
        jp_fetch, "tony", "api", "jobs", app_id, "logs", params={"task": "worker:0"}
    )
    assert "trained in" in logs["text"]
    # TensorBoard went with the chief's container.
    deadline = time.monotonic() + 15
    while (left := tensorboard_processes(app_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=2)


def _json_or_none(r: requests.Response):
    try:
        return r.json() if r.ok else None
    except ValueError:
        return None


def _tb_line(text: str) -> str | None:
    return next((x for x in text.splitlines() if x.startswith("[tony] TensorBoard at ")), None)


async def _wait_async(predicate, timeout: float, what: str):
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = await predicate()
        if got:
            return got
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def _tags_with(jp_fetch, path, *wanted):
    tags = await fetch_json(jp_fetch, *path)
    return tags if set(wanted) <= set(tags.get("train", [])) else None


async def _print_delays(jp_fetch, app_id: str) -> None:
    """Figures for the closing note (printed, never asserted): from the chief writing a scalar
    to it showing through /tony/proxy/<job>/tensorboard/, and from a line printed on the chief
    to it showing in /tony/api/jobs/<id>/logs; polled every POLL_S."""
    import asyncio

    scalars = ("tony", "proxy", app_id, "tensorboard", "data", "plugin", "scalars", "scalars")
    seen_steps: set[int] = set()
    tb_delays: list[float] = []
    log_delays: list[float] = []
    logs = await fetch_json(
        jp_fetch, "tony", "api", "jobs", app_id, "logs", params={"task": "worker:0"}
    )
    offset = logs["offset"]  # only lines printed from now on
    first = True
    deadline = time.monotonic() + 120
    while len(tb_delays) < TB_SAMPLES or len(log_delays) < LOG_SAMPLES:
        if time.monotonic() > deadline:
            break
        try:
            points = await fetch_json(jp_fetch, *scalars, params={"run": "probe", "tag": "probe"})
        except HTTPClientError as e:  # 404: TensorBoard has not loaded the probe run yet
            if e.code != 404:
                raise
            points = []
        now = time.time()
        new = [(wall, step) for wall, step, _ in points if step not in seen_steps]
        seen_steps.update(step for _, step in new)
        if not first:  # the first read finds what was written before we looked
            tb_delays += [now - wall for wall, _ in new]
        first = False
        got = await fetch_json(
            jp_fetch,
            "tony",
            "api",
            "jobs",
            app_id,
            "logs",
            params={"task": "worker:0", "offset": offset},
        )
        now = time.time()
        offset = got["offset"]
        log_delays += [now - float(s) for s in re.findall(r"^probe (\d+\.\d+)$", got["text"], re.M)]
        await asyncio.sleep(POLL_S)
    load = os.getloadavg()[0]
    for name, xs in (("tensorboard_scalar", tb_delays), ("log_line", log_delays)):
        if not xs:
            print(f"[figures] yarn {name}_delay_s: no samples")
            continue
        q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
        print(
            "[figures] "
            + json.dumps(
                {
                    "figure": f"yarn {name} delay, chief to the Jupyter server's answer (s)",
                    "samples": len(xs),
                    "p50": round(statistics.median(xs), 3),
                    "p99": round(q[98], 3),
                    "max": round(max(xs), 3),
                    "poll_s": POLL_S,
                    "load1": round(load, 2),
                }
            )
        )
