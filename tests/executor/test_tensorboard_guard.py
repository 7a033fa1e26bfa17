"""The guard in front of a job's TensorBoard, on a stand-in WSGI app (werkzeug's test client, no
server): each way in that it admits, each request it refuses, the cookie flow, and how the
secrets reach the TensorBoard process. A real TensorBoard behind it: test_tensorboard.py."""

import pytest
from werkzeug.test import Client

from tony_jupyter.executor.tensorboard_guard import Guard, GuardConfig

KEY = "k" * 43
PATH_KEY = "p" * 32


def board(environ, start_response):
    """Stands in for TensorBoard: answers with the path it was asked for."""
    body = f"BOARD {environ.get('SCRIPT_NAME', '')}|{environ['PATH_INFO']}".encode()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


def guarded(secure: bool = False, owner: str = "alice") -> Client:
    return Client(Guard(board, GuardConfig(KEY, PATH_KEY, owner, secure)))


def refused(r, reason: str) -> None:
    assert r.status_code == 403
    assert r.mimetype == "text/plain"
    assert reason in r.text and "BOARD" not in r.text


def test_a_request_without_credentials_is_refused():
    for secure in (False, True):
        refused(guarded(secure).get("/data/runs"), "open it through Jupyter")
        refused(guarded(secure).get("/"), "open it through Jupyter")


def test_the_bearer_key_is_admitted_and_a_wrong_one_refused():
    c = guarded(secure=True)
    r = c.get("/data/runs", headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200 and r.text == "BOARD |/data/runs"
    refused(c.get("/data/runs", headers={"Authorization": "Bearer " + "x" * 43}), "wrong key")
    refused(c.get("/data/runs", headers={"Authorization": f"token {KEY}"}), "wrong key")
    refused(c.get("/data/runs", headers={"Authorization": f"Bearer {KEY[:-1]}"}), "wrong key")


def test_a_first_visit_with_the_key_sets_a_cookie_and_redirects_without_it():
    c = guarded(secure=True)
    r = c.get(f"/data/runs?tony_token={KEY}&run=a")
    assert r.status_code == 302 and r.headers["Location"] == "/data/runs?run=a"
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
    assert KEY not in cookie and "BOARD" not in r.text
    after = c.get("/data/runs?run=a")  # the client keeps the cookie
    assert after.status_code == 200 and after.text == "BOARD |/data/runs"
    assert guarded(secure=True).get("/data/runs").status_code == 403  # a browser without it


def test_the_redirect_keeps_the_path_as_it_came():
    r = guarded().get(f"/data/a%20b/%C3%A9?tony_token={KEY}")
    assert r.status_code == 302 and r.headers["Location"] == "/data/a%20b/%C3%A9"


def test_a_wrong_key_in_the_url_or_a_forged_cookie_is_refused():
    c = guarded()
    r = c.get("/?tony_token=" + "x" * 43)
    refused(r, "wrong tony_token")
    assert "Set-Cookie" not in r.headers
    name = Guard(board, GuardConfig(KEY, PATH_KEY, "alice")).cookie_name
    c.set_cookie(name, KEY)  # the key itself is not the cookie's value
    refused(c.get("/data/runs"), "open it through Jupyter")


def test_the_path_key_is_admitted_without_kerberos_and_stripped():
    c = guarded(secure=False)
    r = c.get(f"/{PATH_KEY}/data/runs")
    assert r.status_code == 200 and r.text == f"BOARD /{PATH_KEY}|/data/runs"
    r = c.get(f"/{PATH_KEY}")  # TensorBoard's page needs the trailing slash
    assert r.status_code == 302 and r.headers["Location"] == f"/{PATH_KEY}/"
    refused(c.get(f"/{PATH_KEY[:-1]}/data/runs"), "open it through Jupyter")
    refused(c.get(f"/x/{PATH_KEY}/data/runs"), "open it through Jupyter")


def test_on_a_secure_cluster_the_path_key_needs_the_owner_as_proxy_user():
    c = guarded(secure=True, owner="alice")
    refused(c.get(f"/{PATH_KEY}/data/runs"), "no proxy-user")
    c.set_cookie("proxy-user", "bob")
    refused(c.get(f"/{PATH_KEY}/data/runs"), "bob is not the owner of this job")
    refused(c.get("/data/runs"), "open it through Jupyter")  # only under the path key
    c.set_cookie("proxy-user", "alice")
    r = c.get(f"/{PATH_KEY}/data/runs")
    assert r.status_code == 200 and r.text == f"BOARD /{PATH_KEY}|/data/runs"


def test_an_unset_owner_admits_no_proxy_user():
    c = guarded(secure=True, owner="")
    c.set_cookie("proxy-user", "")
    refused(c.get(f"/{PATH_KEY}/"), "no proxy-user")


@pytest.mark.parametrize("secure", [False, True])
def test_the_config_travels_in_the_environment_and_is_removed_once_read(secure):
    config = GuardConfig(KEY, PATH_KEY, "alice", secure)
    env = {"PATH": "/bin", **config.to_env()}
    assert all(v not in ("", None) for v in env.values())
    assert GuardConfig.from_env(env) == config
    assert env == {"PATH": "/bin"}
    assert GuardConfig.from_env({"PATH": "/bin"}) is None
