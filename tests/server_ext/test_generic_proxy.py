"""jupyter-server-proxy's own ``/proxy/<port>/`` reaches any local port for an authenticated
user: the docs say so (docs/tensorboard.md), and turning that extension off keeps
``/tony/proxy/`` working."""

from pathlib import Path

import pytest
import tornado.web
from helpers.server import status
from tornado import httpserver, netutil

pytest_plugins = ["pytest_jupyter.jupyter_server"]


class Hello(tornado.web.RequestHandler):
    def get(self, path):
        self.finish("hello")


@pytest.fixture(params=[True, False], ids=["generic-on", "generic-off"])
def jp_server_config(request):
    exts = {"tony_jupyter": True, "jupyter_server_proxy": request.param}
    return {"ServerApp": {"jpserver_extensions": exts}}


@pytest.fixture
def local_port():
    sockets = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(tornado.web.Application([("/(.*)", Hello)]))
    server.add_sockets(sockets)
    yield sockets[0].getsockname()[1]
    server.stop()


async def test_the_generic_route_reaches_any_local_port_unless_turned_off(
    jp_fetch, jp_server_config, local_port, tony_home
):
    generic = jp_server_config["ServerApp"]["jpserver_extensions"]["jupyter_server_proxy"]
    code = await status(jp_fetch, "proxy", str(local_port), "x")
    assert code == (200 if generic else 404)
    assert await status(jp_fetch, "tony", "api", "jobs") == 200  # tony's routes stay


def test_the_docs_say_so_and_how_to_turn_it_off():
    readme = (Path(__file__).parents[2] / "docs" / "tensorboard.md").read_text()
    assert "*every other port listening on localhost*" in readme
    assert "jupyter server extension disable jupyter_server_proxy" in readme
    assert '"jupyter_server_proxy": False' in readme
