"""The proxy turns TensorBoard's auto-reload on (its page would otherwise never show scalars
written after it loaded), within TensorBoard's own CSP."""

import base64
import hashlib
from types import SimpleNamespace

from tornado.httputil import HTTPHeaders

from tony_jupyter.server_ext.tensorboard import SCRIPT, enable_autoreload

INDEX = (
    b'<!doctype html><meta name="tb-relative-root" content="./"><script src="index.js"></script>'
)
CSP = "default-src 'self';script-src 'self' 'unsafe-eval'"


def response(body=INDEX, code=200):
    return SimpleNamespace(
        body=body, code=code, headers=HTTPHeaders({"Content-Security-Policy": CSP})
    )


def test_index_page_gets_the_settings_script_and_its_hash():
    r = response()
    enable_autoreload(r, "/")
    assert r.body.startswith(b"<!doctype html><script>" + SCRIPT.encode() + b"</script><meta")
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    assert r.headers["Content-Security-Policy"] == (
        f"default-src 'self';script-src 'self' 'unsafe-eval' 'sha256-{digest}'"
    )


def test_other_paths_and_errors_are_untouched():
    for path, code in (("/data/runs", 200), ("/index.js", 200), ("/", 404)):
        r = response(code=code)
        enable_autoreload(r, path)
        assert r.body == INDEX and r.headers["Content-Security-Policy"] == CSP
