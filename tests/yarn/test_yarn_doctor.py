"""``tony-jupyter doctor`` on the devcluster: every check passes, its probe container really
runs on a NodeManager and is reached from here; a Python missing on the nodes and a
ResourceManager at a wrong address fail, each naming the fix; nothing is left behind (no live
probe application, no file of its HDFS check)."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

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


def test_the_probe_runs_the_packed_venv_and_its_interpreter_as_a_job_would(
    tony_home, cluster, capsys, tmp_path, monkeypatch
):
    """With --pack-env the probe's container localizes the job's archives (the venv, its
    interpreter) from the job's HDFS cache and runs the probe in the venv assembled over them;
    what it finds of the base interpreter on the node decides --ship-python auto next. The
    interpreter's archive is kept on this host too: after the cluster's cache is cleared,
    staging it again packs nothing."""
    from tony_jupyter.launcher.yarn import envcache, interpreter, secure, shipchoice

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    base = Path(os.path.realpath(sys.base_prefix))
    assert interpreter.not_relocatable(base) is None  # this machine's pyenv Python
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    ver = "{}.{}".format(*sys.version_info[:2])
    before = {a["id"] for a in probe_apps(cluster)}

    t0 = time.monotonic()
    code, out = doctor(capsys, "--pack-env", str(venv), "--ship-python", "always")
    first_s = time.monotonic() - t0
    assert code == 0, out
    assert passed(out, "job's python", f"the packed venv {venv} ("), out
    assert f"with its Python {base} (" in out, out
    assert passed(out, "python on the nodes", ".tony-venv/bin/python is Python "), out
    assert "(unpacked by the NodeManager)" in out
    # the one-host devcluster's nodes have this Python at its path
    assert passed(out, "venv's python on the nodes", f"{venv_home(venv)}/python{ver} is on "), out
    conf = secure.connect().conf
    key = shipchoice.cluster_key(conf)
    assert shipchoice.found(key, base).present
    assert shipchoice.decide("auto", venv, key).prefix is None
    assert_nothing_left(cluster, before)

    # auto, now that the probe found it there: the venv alone, on the nodes' own Python
    code, out = doctor(capsys, "--pack-env", str(venv))
    assert code == 0, out
    assert f"on the nodes' {venv_home(venv)}/python{ver} (the doctor's probe found" in out, out
    assert passed(out, "python on the nodes", "env/bin/python is Python "), out
    assert "venv's python on the nodes" not in out  # checked only where it is shipped

    # the cluster's cache cleared: the interpreter's archive is copied from this host's
    staging = secure.connect().staging
    digest = interpreter.content_hash(base)
    staging.client.delete(f"{staging.root}/pythons/{digest}.tar.gz")
    kept = envcache.directory(envcache.PYTHONS) / f"{digest}.tar.gz"
    assert kept.is_file()
    entry, info = staging.python_archive(base)
    assert info["local_cache"] is True and info["bytes_uploaded"] == kept.stat().st_size
    print(
        f"\ndoctor with the interpreter packed and uploaded: {first_s:.1f} s; staged again "
        f"from this host's cache: {info['pack_s']} s to copy, {info['upload_s']} s to upload "
        f"({entry['size'] / (1 << 20):.0f} MB)"
    )


def venv_home(venv: Path) -> str:
    from tony_jupyter.core import venvdir

    return venvdir.pyvenv_cfg(venv)["home"]


def passed(out: str, name: str, detail: str) -> bool:
    """Whether the report says ``name`` passed with a detail starting ``detail``."""
    return any(
        line.split() [:1] == ["pass"] and line.strip()[4:].strip().startswith(name)
        and line.strip()[4:].strip()[len(name):].strip().startswith(detail)
        for line in out.splitlines()
    )  # fmt: skip
