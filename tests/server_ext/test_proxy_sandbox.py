"""Nothing a job serves runs in Jupyter's origin (server_ext/sandbox.py), in-process with
jp_fetch, 127.0.0.1 only: every proxied answer is sandboxed by its CSP and sets no cookie; a
browser's navigation goes on to the framed route, whose capability opens that one endpoint,
without Jupyter's cookie, and never reaches the upstream."""

import json
from urllib.parse import urlparse

import pytest
import tornado.httpclient
import tornado.web
from tornado import httpserver, netutil

from tony_jupyter.server_ext import sandbox

pytest_plugins = ["pytest_jupyter.jupyter_server"]

SEEN: list[dict] = []
PAGE = "<html><script>fetch('/api/kernels').then(r => r.text())</script></html>"


class HostilePage(tornado.web.RequestHandler):
    """What a task's code may serve: a script, and Jupyter's cookie names to set."""

    def get(self, path):
        SEEN.append({"uri": self.request.uri, "headers": dict(self.request.headers)})
        self.set_header("Set-Cookie", "_xsrf=planted; Path=/")
        self.add_header("Set-Cookie", "username-127-0-0-1=planted; Path=/")
        self.set_header("Content-Security-Policy", "script-src 'self' 'unsafe-inline'")
        self.finish(PAGE)

    def post(self, path):
        SEEN.append({"uri": self.request.uri, "headers": dict(self.request.headers)})
        self.finish({"posted": True})

    def check_xsrf_cookie(self):
        pass


@pytest.fixture
def upstream():  # the 'tensorboard' endpoint running_job registers (helpers/server.py)
    SEEN.clear()
    sockets = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(tornado.web.Application([("/(.*)", HostilePage)]))
    server.add_sockets(sockets)
    yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"
    server.stop()


def sandboxed(r) -> None:
    policies = r.headers.get_list("Content-Security-Policy")
    assert sandbox.POLICY in policies, policies
    assert not any("allow-same-origin" in p for p in policies)
    assert r.headers.get_list("Set-Cookie") == []


async def test_a_proxied_answer_is_sandboxed_and_sets_no_cookie(jp_fetch, running_job):
    r = await jp_fetch("tony", "proxy", running_job.job_id, "tensorboard", "page")
    assert r.code == 200 and b"<script>" in r.body
    sandboxed(r)
    # Errors too: the proxy's own answers are never a page in Jupyter's origin either.
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("tony", "proxy", running_job.job_id, "nope", "x")
    assert e.value.code == 404
    sandboxed(e.value.response)


async def test_a_navigation_goes_on_to_the_framed_route_which_needs_no_cookie(
    jp_fetch, jp_serverapp, jp_base_url, running_job, http_server_port
):
    job = running_job.job_id
    token = jp_serverapp.identity_provider.token
    r = await jp_fetch(
        "tony", "proxy", job, "tensorboard", "page",
        params={"token": token, "run": "a b"}, headers={"Sec-Fetch-Mode": "navigate"},
        follow_redirects=False, raise_error=False,
    )  # fmt: skip
    assert r.code == 302
    where = urlparse(r.headers["Location"])
    cap = sandbox.capability(job, "tensorboard")
    assert where.path == f"{jp_base_url}tony/framed/{job}/tensorboard/{cap}/page"
    assert where.query == "run=a+b" and token not in r.headers["Location"]
    sandboxed(r)

    # The framed route: no Jupyter auth at all (a sandboxed page's requests carry none).
    client = tornado.httpclient.AsyncHTTPClient()
    base = f"http://127.0.0.1:{http_server_port[-1]}"
    url = f"{base}{where.path}?{where.query}"
    headers = {"Origin": "null", "Referer": url}
    got = await client.fetch(url, headers=headers)
    assert got.code == 200 and got.body == PAGE.encode()
    sandboxed(got)
    assert got.headers["Access-Control-Allow-Origin"] == "*"
    posted = await client.fetch(url, method="POST", body="x=1", headers=headers)
    assert json.loads(posted.body) == {"posted": True}  # TensorBoard's POSTs: no XSRF cookie
    sent = [{k.lower(): v for k, v in hit["headers"].items()} for hit in SEEN]
    assert [hit["uri"] for hit in SEEN] == ["/page?run=a+b", "/page?run=a+b"]
    assert all("referer" not in h and cap not in json.dumps(h) for h in sent), json.dumps(sent)
    pre = await client.fetch(url, method="OPTIONS", headers={
        "Origin": "null", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-xsrf-protected"})  # fmt: skip
    assert pre.code == 204 and pre.headers["Access-Control-Allow-Headers"] == "x-xsrf-protected"
    assert len(SEEN) == 2  # a preflight is the proxy's to answer


@pytest.mark.parametrize("which", ["wrong", "other endpoint", "other job", "short"])
async def test_the_framed_route_opens_only_its_own_endpoint(
    http_server_client, jp_base_url, running_job, which
):
    job = running_job.job_id
    cap = {
        "wrong": "A" * 43,
        "other endpoint": sandbox.capability(job, "metrics"),
        "other job": sandbox.capability("tony_20240101_000000_aaaaaa", "tensorboard"),
        "short": sandbox.capability(job, "tensorboard")[:42],
    }[which]
    url = f"{jp_base_url}tony/framed/{job}/tensorboard/{cap}/page"
    r = await http_server_client.fetch(url, raise_error=False, follow_redirects=False)
    assert r.code == 404, r.code
    assert SEEN == []


async def test_the_proxy_without_jupyters_auth_is_refused(
    http_server_client, jp_base_url, running_job
):
    url = f"{jp_base_url}tony/proxy/{running_job.job_id}/tensorboard/page"
    r = await http_server_client.fetch(url, raise_error=False, follow_redirects=False)
    assert r.code in (302, 403) and SEEN == []
