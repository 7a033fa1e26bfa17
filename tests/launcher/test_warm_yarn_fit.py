"""Which jobs the kernel's warm YARN AM may take (launcher/yarn/warmkeeper.py): only one whose every
difference from a fresh submission is none. Unit tests on the rules, with a stand-in cluster."""

from types import SimpleNamespace

import pytest

from tony_jupyter.core.bundle import Bundle
from tony_jupyter.launcher.yarn import warmkeeper as warm
from tony_jupyter.options import parse_job_args


def cluster(user="alice", secure=False):
    conf = SimpleNamespace(rm=SimpleNamespace(url="http://rm:8088"), user=user)
    return SimpleNamespace(conf=conf, secure=secure)


def spec(args=""):
    return parse_job_args(f"--backend yarn --workers 2 {args}")[1]


BUNDLE = Bundle(source="1", names=b"", filename="<cell>", pushed=())


@pytest.mark.parametrize(
    "other",
    ["--workers 3", "--memory 3g", "--gpus 1", "--queue gpu", "--node-label gpu",
     "--conf tony.am.memory=2g", "--ps 1", "--name other", "--python /opt/py/bin/python"],
)  # fmt: skip
def test_a_job_of_another_shape_does_not_fit(other):
    last = warm.key(spec(), cluster(), None)
    assert warm.key(spec(), cluster(), None) == last
    assert warm.key(spec(other), cluster(), None) != last


def test_another_user_or_packed_environment_does_not_fit():
    last = warm.key(spec(), cluster(), {"resource": "hdfs:///envs/a.tgz"})
    assert warm.key(spec(), cluster("bob"), {"resource": "hdfs:///envs/a.tgz"}) != last
    assert warm.key(spec(), cluster(), {"resource": "hdfs:///envs/b.tgz"}) != last


def test_kerberos_am_retries_and_shards_go_the_usual_way():
    assert warm.usable(spec(), BUNDLE, cluster())
    assert not warm.usable(spec(), BUNDLE, cluster(secure=True))
    assert not warm.usable(spec("--conf tony.am.retry-count=1"), BUNDLE, cluster())
    sharded = Bundle(source="1", names=b"", filename="<cell>", pushed=(), shards=object())
    assert not warm.usable(spec(), sharded, cluster())


def test_it_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv("TONY_JUPYTER_WARM_YARN", raising=False)
    assert warm.idle_s() == 0
    monkeypatch.setenv("TONY_JUPYTER_WARM_YARN", "600")
    assert warm.idle_s() == 600
    monkeypatch.setenv("TONY_JUPYTER_WARM", "0")
    assert warm.idle_s() == 0
