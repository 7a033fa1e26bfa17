"""Hadoop's token codec and the task side of delegation tokens, without a cluster: the
urlString form (Writable, URL-safe base64), variable-length integers, the identifier's maximum
date, relabelling for Hadoop's RPC client, and the task's current token (renewed ones first)."""

from __future__ import annotations

import io
import json

import pytest

from tony_jupyter.core import tokens
from tony_jupyter.core.kerberos import service_principal, short_name
from tony_jupyter.core.tokens import HDFS_KIND, WEBHDFS_KIND, Token
from tony_jupyter.launcher.yarn.secure import JobTokens, _webhdfs_url, credentials_json

# What a devcluster NameNode handed out for alice (renewer yarn), and the RM for alice.
WEBHDFS_TOKEN = (
    "HQAFYWxpY2UEeWFybgCKAaIJwCx9igGiCcGMDQUCFEiRLGYJ1lME8yjsf6bElrJ_DZx_EldFQkhERlMgZGVsZWdh"
    "dGlvbg8xMjcuMC4wLjE6MzgwMjA"
)


@pytest.mark.parametrize(
    "n", [0, 1, -1, 127, -112, 128, -113, 255, 65535, 1795460008973, -(2**40), 2**62]
)
def test_vlong_round_trips_as_hadoops_writable_utils(n):
    out = io.BytesIO()
    tokens.write_vlong(out, n)
    assert tokens.read_vlong(io.BytesIO(out.getvalue())) == n


def test_vlong_sizes_match_hadoop():
    def size(n):
        out = io.BytesIO()
        tokens.write_vlong(out, n)
        return len(out.getvalue())

    assert [size(n) for n in (127, 128, -112, -113, 2**16)] == [1, 2, 1, 2, 4]


def test_a_namenodes_token_decodes_and_encodes_to_the_same_string():
    t = Token.decode(WEBHDFS_TOKEN)
    assert (t.kind, t.service) == (WEBHDFS_KIND, "127.0.0.1:38020")
    assert t.encode() == WEBHDFS_TOKEN
    assert t.max_date_ms() == 1795460008973  # what the NameNode's identifier says


def test_relabel_keeps_what_the_namenode_checks():
    t = Token.decode(WEBHDFS_TOKEN).relabel(HDFS_KIND)
    back = Token.decode(t.encode())
    assert back.kind == HDFS_KIND
    assert (back.identifier, back.password, back.service) == (
        Token.decode(WEBHDFS_TOKEN).identifier,
        Token.decode(WEBHDFS_TOKEN).password,
        "127.0.0.1:38020",
    )
    assert tokens.alias(back) == "127.0.0.1:38020"


@pytest.mark.parametrize("garbage", ["", "not base64!", "AAAA", WEBHDFS_TOKEN[:20]])
def test_garbage_is_not_a_token(garbage):
    with pytest.raises(ValueError, match="not a Hadoop token"):
        Token.decode(garbage)


def test_a_tasks_token_prefers_the_renewed_file(tmp_path):
    path = tmp_path / tokens.FILE_NAME
    env = {tokens.ENV_TOKEN: "first", tokens.ENV_FILE: str(path)}
    assert tokens.hdfs_token(env) == "first"  # no file yet
    tokens.write_credentials(str(path), {"version": 2, "tokens": {"hdfs": "second"}})
    assert tokens.hdfs_token(env) == "second"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    path.write_text("{half")  # never half-written by write_credentials; still survivable
    assert tokens.hdfs_token(env) == "first"
    assert tokens.hdfs_token({}) is None  # a plain cluster: no token


def test_tokens_env_for_an_executor():
    env = tokens.tokens_env({"version": 3, "tokens": {"hdfs": "abc", "rm": "x"}}, "{{PWD}}")
    assert env == {
        tokens.ENV_VERSION: "3",
        tokens.ENV_FILE: "{{PWD}}/.tony-credentials.json",
        tokens.ENV_TOKEN: "abc",
    }


def test_submission_forms():
    got = credentials_json({"127.0.0.1:8020": "t1"})
    assert got["tokens"] == {"entry": [{"key": "127.0.0.1:8020", "value": "t1"}]}
    json.dumps(got)


def test_refresh_before_the_earliest_maximum_lifetime():
    jt = JobTokens({}, [1000.0 + 100, 1000.0 + 60])
    assert jt.refresh_time(now=1000.0) == pytest.approx(1000.0 + 0.7 * 60)
    assert JobTokens({}, []).refresh_time(now=0.0) == 3600


def test_other_namenodes_map_to_their_webhdfs_address():
    assert _webhdfs_url("hdfs://nn2.example.com:8020") == "http://nn2.example.com:9870"
    assert _webhdfs_url("http://nn2:50070/") == "http://nn2:50070"
    with pytest.raises(Exception, match="tony.other.namenodes"):
        _webhdfs_url("s3://bucket")


def test_principal_names():
    assert short_name("alice@EXAMPLE.COM") == short_name("alice/host@EXAMPLE.COM") == "alice"
    assert service_principal("rm/_HOST@R", "NN1.Example.com") == "rm/nn1.example.com@R"


def test_a_session_made_elsewhere_verifies_against_our_bundle_on_each_call(monkeypatch):
    """requests' REQUESTS_CA_BUNDLE beats a session's own verify unless each call passes it."""
    import requests

    from tony_jupyter.core import tokens

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/the/shell/bundle.pem")
    seen = []
    session = requests.Session()
    session.request = lambda method, url, *a, **kw: seen.append(kw.get("verify"))
    tokens.verify_each_call(session, "/cluster/ca.pem")
    tokens.verify_each_call(session, "/cluster/ca.pem")  # again: not wrapped twice
    session.request("GET", "https://nn:9871/webhdfs/v1/")
    session.request("GET", "https://nn:9871/webhdfs/v1/", verify=False)  # a caller's own wins
    assert seen == ["/cluster/ca.pem", False]
