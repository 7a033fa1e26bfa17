"""The server extension in-process (pytest_jupyter's jp_fetch): /tony/api/jobs... and the
/tony/proxy/<job>/<endpoint>/ reverse proxy, with Jupyter's auth and XSRF."""

import json
import re
import time

import pytest
from helpers.jobs import fetch_json
from helpers.server import HITS, finished_job, status

pytest_plugins = ["pytest_jupyter.jupyter_server"]


# --- the REST API -------------------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
async def test_jobs_list_job_events_logs(jp_fetch, running_job, tony_home):
    old = finished_job(tony_home)
    got = await fetch_json(jp_fetch, "tony", "api", "jobs")
    rows = {j["job_id"]: j for j in got["jobs"]}
    assert rows[old]["state"] == "SUCCEEDED"
    live = rows[running_job.job_id]
    assert live["state"] == "RUNNING" and live["endpoints"] == ["tensorboard"]
    assert [t["id"] for t in live["tasks"]] == ["worker:0"]

    snap = await fetch_json(jp_fetch, "tony", "api", "jobs", running_job.job_id)
    worker = next(t for t in snap["tasks"] if t["id"] == "worker:0")
    assert snap["endpoints"]["tensorboard"].startswith(f"http://{worker['host']}:")
    ev = await fetch_json(
        jp_fetch, "tony", "api", "jobs", running_job.job_id, "events", params={"since": 0}
    )
    assert any(e["kind"] == "endpoint" for e in ev["events"]) and ev["next"] == len(ev["events"])
    deadline, logs = time.monotonic() + 10, {"text": ""}
    while "registered" not in logs["text"] and time.monotonic() < deadline:
        logs = await fetch_json(
            jp_fetch,
            "tony",
            "api",
            "jobs",
            running_job.job_id,
            "logs",
            params={"task": "worker:0", "offset": 0},
        )
    assert "registered" in logs["text"] and logs["offset"] == len(logs["text"].encode())
    assert await status(jp_fetch, "tony", "api", "jobs", running_job.job_id, "logs") == 400


@pytest.mark.usefixtures("backend")
async def test_kill_from_the_api(jp_fetch, running_job):
    got = await fetch_json(
        jp_fetch, "tony", "api", "jobs", running_job.job_id, "kill", method="POST", body=""
    )
    assert got["killed"] is True
    deadline = time.monotonic() + 20
    while running_job.snapshot().state != "KILLED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_job.snapshot().state == "KILLED"


@pytest.mark.parametrize("job", ["tony_nope", "..", "a.b", "%2e%2e"])
async def test_unknown_or_malformed_job_is_404(jp_fetch, tony_home, job):
    assert await status(jp_fetch, "tony", "api", "jobs", job) == 404


async def test_api_without_token_is_refused(jp_fetch, tony_home):
    job = finished_job(tony_home)
    no_auth = {"Authorization": ""}
    assert await status(jp_fetch, "tony", "api", "jobs", headers=no_auth) == 403
    assert await status(jp_fetch, "tony", "api", "jobs", job, headers=no_auth) == 403
    kill = await status(
        jp_fetch, "tony", "api", "jobs", job, "kill", method="POST", body="", headers=no_auth
    )
    assert kill == 403
    assert await status(jp_fetch, "tony", "api", "jobs", job) == 200


async def test_post_with_cookie_but_without_xsrf_is_refused(jp_fetch, tony_home, jp_serverapp):
    job = finished_job(tony_home)
    cookie = await login_cookie(jp_fetch, jp_serverapp)
    headers = {"Authorization": "", "Cookie": cookie}
    assert await status(jp_fetch, "tony", "api", "jobs", headers=headers) == 200  # logged in
    assert (
        await status(
            jp_fetch, "tony", "api", "jobs", job, "kill", method="POST", body="", headers=headers
        )
        == 403
    )
    xsrf = "deadbeef"  # tornado accepts a bare hex token (its version-1 format)
    ok = {"Authorization": "", "Cookie": f"{cookie}; _xsrf={xsrf}", "X-XSRFToken": xsrf}
    assert (
        await status(
            jp_fetch, "tony", "api", "jobs", job, "kill", method="POST", body="", headers=ok
        )
        == 200
    )


async def login_cookie(jp_fetch, jp_serverapp) -> str:
    """A browser's session: the login cookie that ?token= gives."""
    r = await jp_fetch(
        "api",
        "status",
        params={"token": jp_serverapp.identity_provider.token},
        headers={"Authorization": ""},
    )
    cookies = [c.split(";", 1)[0] for c in r.headers.get_list("Set-Cookie")]
    assert cookies, "no login cookie"
    return "; ".join(cookies)


# --- the proxy ------------------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
async def test_proxy_reaches_the_registered_endpoint(jp_fetch, running_job):
    got = await fetch_json(
        jp_fetch,
        "tony",
        "proxy",
        running_job.job_id,
        "tensorboard",
        "data",
        "runs",
        params={"x": "1"},
    )
    assert got == {"method": "GET", "uri": "/data/runs?x=1"}
    r = await jp_fetch(
        "tony",
        "proxy",
        running_job.job_id,
        "tensorboard",
        follow_redirects=False,
        raise_error=False,
    )
    assert r.code in (301, 302) and r.headers["Location"].endswith("/tensorboard/")


async def test_proxy_websocket(jp_ws_fetch, running_job):
    ws = await jp_ws_fetch("tony", "proxy", running_job.job_id, "tensorboard", "ws")
    await ws.write_message("hi")
    assert await ws.read_message() == "echo:hi"
    ws.close()


async def test_proxy_refuses_unregistered_endpoints_hosts_and_jobs(jp_fetch, running_job, upstream):
    job = running_job.job_id
    port = upstream.rsplit(":", 1)[1].strip("/")
    for parts in (
        ("tony", "proxy", job, "amui", "x"),  # not registered
        ("tony", "proxy", job, f"127.0.0.1:{port}", "x"),  # a host:port instead of a name
        ("tony", "proxy", job, port, "x"),
        ("tony", "proxy", "tony_20990101_000000_ffffff", "tensorboard", "x"),  # no such job
        ("tony", "proxy", "..", "tensorboard", "x"),
    ):
        assert await status(jp_fetch, *parts) == 404, parts
    assert HITS == []


async def test_proxy_paths_stay_on_the_registered_upstream(
    jp_serverapp, http_server_client, jp_base_url, running_job, upstream
):
    token = jp_serverapp.identity_provider.token
    base = f"{jp_base_url}tony/proxy/{running_job.job_id}/tensorboard"
    for path in (
        "//evil.example:80/x",
        "/../../../api/contents",
        "/%2e%2e/%2e%2e/api/status",
        "/http://evil.example/x",
        "/@evil.example/x",
    ):
        r = await http_server_client.fetch(
            base + path, headers={"Authorization": f"token {token}"}, raise_error=False
        )
        assert r.code == 200, (path, r.code)
        assert json.loads(r.body)["uri"].startswith("/"), path  # it reached our upstream
    assert len(HITS) == 5


async def test_proxy_without_token_is_refused(jp_fetch, running_job):
    no_auth = {"Authorization": ""}
    code = await status(
        jp_fetch, "tony", "proxy", running_job.job_id, "tensorboard", "x", headers=no_auth
    )
    assert code in (302, 403)  # GET: Jupyter redirects to its login page
    post = await status(
        jp_fetch,
        "tony",
        "proxy",
        running_job.job_id,
        "tensorboard",
        "x",
        method="POST",
        body="",
        headers=no_auth,
    )
    assert post == 403
    assert HITS == []


async def test_proxy_post_needs_xsrf_or_same_origin(
    jp_fetch, jp_serverapp, jp_http_port, running_job
):
    cookie = await login_cookie(jp_fetch, jp_serverapp)
    parts = ("tony", "proxy", running_job.job_id, "tensorboard", "data")
    base = {"Authorization": "", "Cookie": cookie}
    assert await status(jp_fetch, *parts, method="POST", body="", headers=base) == 403
    evil = dict(base, Origin="http://evil.example")
    assert await status(jp_fetch, *parts, method="POST", body="", headers=evil) == 403
    assert HITS == []
    same = dict(base, Origin=f"http://127.0.0.1:{jp_http_port}")  # the page's own origin
    assert await status(jp_fetch, *parts, method="POST", body="", headers=same) == 200
    assert HITS == [("POST", "/data")]


def test_extension_is_enabled_on_install():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "server", "extension", "list"],
        capture_output=True,
        text=True,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    assert "tony_jupyter enabled" in text and re.search(r"tony_jupyter \S+ OK", text), text


def test_kernel_side_proxy_url(monkeypatch):
    from tony_jupyter.core.proxyurls import proxy_url

    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    monkeypatch.setenv("TONY_JUPYTER_BASE_URL", "/user/tester/")
    assert proxy_url("tony_x", "tensorboard") == "/user/tester/tony/proxy/tony_x/tensorboard/"
    monkeypatch.delenv("TONY_JUPYTER_BASE_URL")
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/hub")
    assert proxy_url("tony_x", "tensorboard") == "/user/hub/tony/proxy/tony_x/tensorboard/"
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX")
    assert proxy_url("tony_x", "tensorboard") == "/tony/proxy/tony_x/tensorboard/"


def test_labextension_is_installed_prebuilt():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    assert re.search(r"tony-jupyter v\S+ enabled OK", text), text
