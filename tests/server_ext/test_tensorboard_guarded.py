"""A real job's TensorBoard on the local backend (127.0.0.1 only): its port refuses a plain GET,
the Jupyter server's proxy (in-process, jp_fetch) serves it, with the key it gets from the AM."""

import requests
from helpers.jobs import fetch_json, submit, wait_for, wait_no_processes

pytest_plugins = ["pytest_jupyter.jupyter_server"]


async def test_tensorboard_refuses_its_port_but_serves_the_jupyter_proxy(jp_fetch, tony_home):
    client = submit("--workers 1", "import time\ntime.sleep(600)", {})
    try:
        url = wait_for(lambda: client.snapshot().endpoints.get("tensorboard"), 120, "TensorBoard")
        assert url.startswith("http://127.0.0.1:")

        plain = requests.get(url, timeout=5)
        assert plain.status_code == 403 and "open it through Jupyter" in plain.text
        assert requests.get(url + "data/runs", timeout=5).status_code == 403

        runs = await fetch_json(
            jp_fetch, "tony", "proxy", client.job_id, "tensorboard", "data", "runs"
        )
        assert runs == []
        page = await jp_fetch("tony", "proxy", client.job_id, "tensorboard", "index.html")
        assert page.code == 200 and b"tb-relative-root" in page.body

        key = client.endpoint("tensorboard").key
        snap = await jp_fetch("tony", "api", "jobs", client.job_id)
        events = await jp_fetch("tony", "api", "jobs", client.job_id, "events")
        assert key not in snap.body.decode() and key not in events.body.decode()
        assert key not in (client.record.dir / "events.jsonl").read_text()
    finally:
        client.kill()
        client.release()
        assert client.wait_am_exit()
    assert wait_no_processes(tony_home) == []
