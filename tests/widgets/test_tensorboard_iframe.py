"""The widget's TensorBoard iframe is sandboxed: a job's page runs in an origin of its own."""

import re

from tony_jupyter.widgets.tensorboard import iframe_html


def test_the_widgets_tensorboard_iframe_is_sandboxed_without_same_origin(monkeypatch):
    monkeypatch.setenv("TONY_JUPYTER_BASE_URL", "/user/a/")
    html = iframe_html("tony_20240101_000000_aaaaaa")
    [sandbox] = re.findall(r'<iframe [^>]*sandbox="([^"]*)"', html)
    assert set(sandbox.split()) == {
        "allow-scripts",
        "allow-forms",
        "allow-popups",
        "allow-downloads",
    }
    assert 'src="/user/a/tony/proxy/tony_20240101_000000_aaaaaa/tensorboard/"' in html
