"""``tony-jupyter doctor`` on the devcluster: every check passes, its probe container really
runs on a NodeManager and is reached from here; a Python missing on the nodes and a
ResourceManager at a wrong address fail, each naming the fix; nothing is left behind (no live
probe application, no file of its HDFS check)."""

import os
import shutil

import pytest
import requests
from helpers.leftovers import live_apps, wait_nothing_left

from tony_jupyter import cli
from tony_jupyter.launcher.doctor import PROBE_APP_TYPE

pytestmark = pytest.mark.yarn


def probe_apps(cluster) -> list[dict]:
    r = requests.get(
        f"{cluster.rm}/ws/v1/cluster/apps", params={"applicationTypes": PROBE_APP_TYPE}, timeout=10
    )
    return ((r.json().get("apps") or {}).get("app")) or []


def assert_nothing_left(cluster, before: set[str]) -> None:
    def doctor_files() -> list[str]:
        r = requests.get(
            f"{cluster.webhdfs}/webhdfs/v1/user/{cluster.user}/.tony-jupyter",
            params={"op": "LISTSTATUS", "user.name": cluster.user},
            timeout=10,
        )
        names = [s["pathSuffix"] for s in r.json()["FileStatuses"]["FileStatus"]]
        return [n for n in names if n.startswith(".doctor-")]

    wait_nothing_left(
        apps=lambda: live_apps(a for a in probe_apps(cluster) if a["id"] not in before),
        hdfs=doctor_files,
    )


def doctor(capsys, *words: str) -> tuple[int, str]:
    code = cli.main(["doctor", *words])
    return code, capsys.readouterr().out


def test_every_check_passes_on_the_devcluster(tony_home, cluster, capsys):
    before = {a["id"] for a in probe_apps(cluster)}
    code, out = doctor(capsys)
    assert code == 0, out
    for name in ("configuration", "resourcemanager", "hdfs", "queue", "nodes"):
        assert f"pass  {name}" in out, out
    assert "ran on " in out and "pass  python on the nodes" in out
    assert "pass  notebook host -> node" in out
    assert "pass  node -> NameNode (RPC)" in out and "pass  node -> ResourceManager" in out
    assert " 0 failed in " in out
    assert_nothing_left(cluster, before)


def test_a_python_missing_on_the_nodes_is_named_with_the_fix(tony_home, cluster, capsys):
    before = {a["id"] for a in probe_apps(cluster)}
    code, out = doctor(capsys, "--python", "/nonexistent/bin/python3")
    assert code == 1, out
    assert "FAIL  probe container  the job's Python /nonexistent/bin/python3 is not on " in out
    assert "code 127" in out and "fix: --pack-env" in out
    assert_nothing_left(cluster, before)


def test_a_resourcemanager_at_a_wrong_address_fails_and_the_probe_is_skipped(
    tony_home, cluster, capsys, monkeypatch, tmp_path
):
    conf = tmp_path / "conf"
    conf.mkdir()
    for name in os.listdir(os.environ["HADOOP_CONF_DIR"]):
        shutil.copy(os.path.join(os.environ["HADOOP_CONF_DIR"], name), conf / name)
    site = (conf / "yarn-site.xml").read_text()
    (conf / "yarn-site.xml").write_text(
        site.replace(
            "</configuration>",
            "<property><name>yarn.resourcemanager.webapp.address</name>"
            "<value>127.0.0.1:9</value></property></configuration>",
        )
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    code, out = doctor(capsys)
    assert code == 1
    assert "FAIL  resourcemanager" in out and "127.0.0.1:9" in out and "Is the cluster up" in out
    assert "skip  probe container  the ResourceManager is not reachable" in out
    assert "pass  hdfs" in out  # the rest is still checked
