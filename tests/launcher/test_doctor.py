"""``tony-jupyter doctor``: the local backend's checks, the report's form, bad arguments, and the
probe script itself run by this machine's Python on 127.0.0.1, read the way the doctor reads it
from a node (a stand-in ResourceManager gives the node; the YARN run is in
tests/yarn/test_yarn_doctor.py)."""

import os
import subprocess
import sys

import pytest

from tony_jupyter import cli
from tony_jupyter.core.errors import SpecError
from tony_jupyter.launcher import doctor
from tony_jupyter.launcher.yarn import probe


def test_without_a_cluster_it_checks_the_local_backend(tony_home, monkeypatch, capsys):
    monkeypatch.delenv("TONY_YARN_RM_URL", raising=False)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "pass  backend" in out and "local" in out
    assert f"pass  home        {tony_home} is writable" in out
    assert "tensorflow" in out and "0 failed" in out
    assert [p.name for p in tony_home.iterdir()] == []  # its write is gone


def test_a_home_it_cannot_write_fails_with_the_path(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TONY_JUPYTER_HOME", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  home" in out and str(tmp_path / "file") in out and "1 failed" in out


@pytest.mark.parametrize(
    "words",
    [["--nope"], ["--queue"], ["extra"], ["--ship-python", "yes"], ["--python", "p", "--pack-env"]],
)
def test_bad_arguments_name_the_usage(words):
    with pytest.raises(SpecError, match=r"doctor \[--python PATH\] \[--queue NAME\]") as e:
        doctor.doctor(words)
    if "--ship-python" in words:
        assert "invalid choice: 'yes'" in str(e.value)
    if "--pack-env" in words:
        assert "--python and --pack-env contradict each other" in str(e.value)


class StandInRM:
    """What the doctor reads of its probe's application: its node, its state."""

    def __init__(self, state="ACCEPTED", node="127.0.0.1:8042", diagnostics=""):
        self.state, self.node, self.diagnostics = state, node, diagnostics

    def app(self, app_id):
        return {
            "state": self.state,
            "amHostHttpAddress": self.node,
            "diagnostics": self.diagnostics,
        }


def start_probe(tmp_path, port: int, targets: list[str], base: str = "") -> subprocess.Popen:
    """The probe's command as YARN would run it, with <LOG_DIR> and NM_HOST as a container has."""
    cmd = probe.command(sys.executable, port, targets, base).replace("<LOG_DIR>", str(tmp_path))
    env = {**os.environ, "NM_HOST": "127.0.0.1"}
    return subprocess.Popen(["bash", "-c", cmd], env=env)


def test_the_probe_reports_its_python_and_what_it_reached(tmp_path):
    import socket

    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        targets = [
            f"127.0.0.1:{listening.getsockname()[1]}",
            f"127.0.0.1:{closed.getsockname()[1]}",
        ]
        port = 40000 + os.getpid() % 10000
        proc = start_probe(tmp_path, port, targets)
        try:
            report, node = doctor._read_probe(StandInRM(), "application_1_0001", port)
        finally:
            assert proc.wait(timeout=30) == 0
    assert node == "127.0.0.1" and report["host"] == "127.0.0.1"
    assert report["version"] == "{}.{}.{}".format(*sys.version_info[:3])
    ok, refused = report["reached"]
    assert ok["ok"] and ok["address"] == targets[0]
    assert not refused["ok"] and "refused" in refused["error"].lower()


def test_a_probe_that_ended_names_its_node_and_the_fix_for_a_missing_python():
    rm = StandInRM("FAILED", "worker1:8042", "Exception from container-launch.\nExit code: 127")
    with pytest.raises(doctor._ProbeFailed) as e:
        doctor._read_probe(rm, "application_1_0001", 40000, "/opt/venv/bin/python3")
    assert e.value.detail.startswith("the job's Python /opt/venv/bin/python3 is not on worker1")
    assert "--pack-env" in e.value.fix and "--python PATH" in e.value.fix
    rm = StandInRM("FAILED", "worker1:8042", "Container exited with a non-zero exit code 1")
    with pytest.raises(doctor._ProbeFailed, match="ended on worker1 before it reported") as e:
        doctor._read_probe(rm, "application_1_0001", 40000)
    assert "yarn logs -applicationId" in e.value.fix


def test_a_probe_that_never_listens_is_reported_within_the_wait(monkeypatch):
    monkeypatch.setattr(doctor, "PROBE_WAIT_S", 1.0)
    with pytest.raises(doctor._ProbeFailed, match="never listened within 1 s"):
        doctor._read_probe(StandInRM(), "application_1_0001", 40000 + os.getpid() % 10000)


def test_a_node_this_host_cannot_reach_is_named_without_waiting_out_the_probe(monkeypatch):
    # A firewall's answer (no route, prohibited), not a refusal: the probe may well listen.
    def no_route(address, timeout=None):
        raise OSError(113, "No route to host")

    monkeypatch.setattr(doctor.socket, "create_connection", no_route)
    monkeypatch.setattr(doctor, "UNREACHED_S", 0.3)
    with pytest.raises(doctor._ProbeFailed) as e:
        doctor._read_probe(StandInRM(node="worker1:8042"), "application_1_0001", 40000)
    assert e.value.check == "notebook host -> node"
    assert "could not reach the probe on worker1 (worker1:40000: [Errno 113] No route" in str(
        e.value
    )
    assert "open the NodeManagers' hosts to this one" in e.value.fix


def test_no_container_is_named_as_such(monkeypatch):
    monkeypatch.setattr(doctor, "PROBE_WAIT_S", 0.5)
    with pytest.raises(doctor._ProbeFailed, match="no container within 0.5 s"):
        doctor._read_probe(StandInRM(node=""), "application_1_0001", 40000)


def test_the_report_marks_each_check_and_its_fix():
    checks = [
        doctor.Check("resourcemanager", True, "active"),
        doctor.Check("python on the nodes", False, "3.9 there", "--pack-env"),
        doctor.Check("probe container", None, "the RM is not reachable"),
    ]
    out = doctor.text(checks, 1.25)
    assert out.splitlines()[0].startswith("  pass  resourcemanager")
    assert "FAIL  python on the nodes  3.9 there" in out and "fix: --pack-env" in out
    assert "skip  probe container" in out and out.endswith("1 passed, 1 failed in 1.2 s")


# --- MLflow: MLFLOW_TRACKING_URI checked from this host, and the way to it from a node ---------


def mlflow_stand_in(code: int, obj: object, seen: list | None = None):
    """A server answering every GET with ``code`` and ``obj`` (JSON; a str: as text)."""
    from http.server import BaseHTTPRequestHandler

    from helpers.fakehttp import reply, serving

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if seen is not None:
                seen.append((self.path, self.headers.get("Authorization")))
            if isinstance(obj, str):
                body = obj.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                reply(self, code, obj)

        def log_message(self, *args):
            pass

    return serving(Handler)


def test_a_tracking_server_that_answers_passes_naming_the_experiment(monkeypatch):
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "digits")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "t0ken")
    seen: list = []
    missing = {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no experiment"}
    with mlflow_stand_in(404, missing, seen) as uri:
        check = doctor._mlflow_answers("mlflow tracking", uri)
    assert check.ok, check
    assert (
        check.detail
        == f"{uri} answers; experiment 'digits' does not exist yet: the first run makes it"
    )
    path, auth = seen[0]
    assert path == "/api/2.0/mlflow/experiments/get-by-name?experiment_name=digits"
    assert auth == "Bearer t0ken"  # as MLflow's client would send it
    with mlflow_stand_in(200, {"experiment": {"experiment_id": "1"}}) as uri:
        check = doctor._mlflow_answers("mlflow tracking", uri + "/")
    assert check.ok and check.detail.endswith("experiment 'digits' exists"), check


@pytest.mark.parametrize(
    ("code", "obj", "detail", "fix"),
    [
        (
            401,
            {"error_code": "UNAUTHENTICATED"},
            "refused this host (HTTP 401)",
            "MLFLOW_TRACKING_TOKEN",
        ),
        (
            404,
            "<html>Not Found</html>",
            "answered HTTP 404 to MLflow's REST API, not MLflow's JSON: <html>",
            "naming an MLflow tracking server",
        ),
        (
            200,
            "<html>a web page</html>",
            "answered HTTP 200 to MLflow's REST API, not MLflow's JSON",
            "naming an MLflow",
        ),
    ],
)
def test_a_tracking_uri_that_is_no_usable_mlflow_server_fails_with_the_fix(code, obj, detail, fix):
    with mlflow_stand_in(code, obj) as uri:
        check = doctor._mlflow_answers("mlflow tracking", uri)
    assert check.ok is False and detail in check.detail, check
    assert fix in check.fix, check


def test_a_tracking_server_that_is_not_there_is_named_with_its_port(tony_home, monkeypatch, capsys):
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        port = closed.getsockname()[1]
        monkeypatch.delenv("TONY_YARN_RM_URL", raising=False)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
        assert cli.main(["doctor"]) == 1  # the local backend checks it too
    out = capsys.readouterr().out
    assert (
        f"FAIL  mlflow tracking  MLFLOW_TRACKING_URI=http://127.0.0.1:{port}: no answer from "
        in out
    )
    assert f"127.0.0.1:{port} on this host (ConnectionError" in out, out
    assert f"fix: start the tracking server (mlflow server --host ADDRESS --port {port}," in out


def test_a_file_store_fails_only_where_the_nodes_are_other_hosts(tmp_path):
    uri = (tmp_path / "mlruns").as_uri()
    # addresses, not names: nothing to resolve (198.18.0.21: the devcluster's worker1, not here)
    check = doctor._mlflow_local_store("mlflow tracking", uri, ["198.18.0.21", "127.0.0.1"])
    assert check.ok is False
    assert check.detail == (
        f"MLFLOW_TRACKING_URI={uri} is a store in files, but the nodes (198.18.0.21) are other "
        "hosts: the chief would log the job's run on its node's disk, never seen here"
    )
    assert "run an MLflow tracking server the nodes reach" in check.fix
    assert doctor._mlflow_local_store("mlflow tracking", uri, ["127.0.0.1"]).ok is True
    assert doctor._mlflow_local_store("mlflow tracking", uri, None).ok is None  # no RM


def test_a_tracking_server_a_node_cannot_reach_is_named_with_host_and_port():
    targets = {"master:8020": "NameNode (RPC)", **doctor._mlflow_target("http://edge:5000/")}
    assert targets["edge:5000"] == "MLflow tracking server"
    assert doctor._mlflow_target("https://mlflow.example") == {
        "mlflow.example:443": "MLflow tracking server"
    }
    assert doctor._mlflow_target("file:///tmp/mlruns") == {}
    report = {
        "version": "{}.{}.{}".format(*sys.version_info[:3]),
        "reached": [
            {"address": "master:8020", "ok": True, "ms": 1},
            {"address": "edge:5000", "ok": False, "error": "[Errno 111] Connection refused"},
        ],
    }
    d = doctor.Doctor()
    ours = "{}.{}".format(*sys.version_info[:2])
    d._probe_report(report, "worker1", doctor.Shipment("/usr/bin/python3", ours, ""), targets)
    (failed,) = [c for c in d.checks if c.ok is False]
    assert failed.name == "node -> MLflow tracking server"
    assert failed.detail.startswith("worker1 could not reach edge:5000: [Errno 111] Connection")
    assert "mlflow server --host edge --port 5000, not 127.0.0.1" in failed.fix
    assert "port 5000 open from the cluster's nodes" in failed.fix


def test_the_python_fix_offers_pack_env_only_where_it_works(tmp_path):
    python_fix = doctor.python_fix
    venv = tmp_path / "venv"  # on this machine's pyenv Python: it goes with the job
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    base = os.path.realpath(sys.base_prefix)
    fix = python_fix(str(venv), base, "3.11")
    assert fix.startswith(f"--pack-env (ship this kernel's venv; its Python {base} goes with it)")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")  # on a system Python
    fix = python_fix(str(venv), "/usr", "3.11")
    assert fix.startswith("--pack-env VENV naming a venv made from the nodes' own Python 3.11")
    assert "/usr is a system prefix" in fix
    assert "conda-pack is not supported" in python_fix(str(_conda(tmp_path)), "/opt/c", "3.11")
    fix = python_fix("/usr", "/usr", "3.11")  # no venv: --pack-env has nothing to ship
    assert not fix.startswith("--pack-env") and "run the kernel in a venv" in fix


def _conda(tmp_path):
    env = tmp_path / "conda"
    (env / "conda-meta").mkdir(parents=True)
    return env


@pytest.mark.parametrize("present", [True, False])
def test_the_probe_says_whether_the_venvs_base_interpreter_is_on_its_node(tmp_path, present):
    base = os.path.realpath(sys.executable) if present else str(tmp_path / "no" / "python3")
    port = 41000 + os.getpid() % 9000
    proc = start_probe(tmp_path, port, [], base)
    try:
        report, _ = doctor._read_probe(StandInRM(), "application_1_0001", port)
    finally:
        assert proc.wait(timeout=30) == 0
    got = report["base"]
    assert got["path"] == base and got["present"] is present
    if present:
        assert got["version"] == "{}.{}.{}".format(*sys.version_info[:3])
    else:
        assert got["version"] == "" and "No such file" in got["error"]


class Conf:
    default_fs, user, secure = "hdfs://nn:8020", "alice", False

    class rm:  # HadoopConf's attribute, an Address
        urls = ["http://rm:8088"]


def test_a_packed_venvs_probe_localizes_what_a_job_does_and_remembers_the_base(tony_home):
    from tony_jupyter.core import nodepython
    from tony_jupyter.launcher.yarn import shipchoice

    entry = {"resource": "hdfs://nn:8020/e.tar.gz", "type": "ARCHIVE", "size": 1, "timestamp": 1}
    ours = "{}.{}".format(*sys.version_info[:2])
    base = os.path.realpath(sys.base_prefix)
    ship = doctor.Shipment(
        nodepython.SHIPPED_PYTHON, ours, "the packed venv", {"env": entry, "pyhome": entry},
        doctor.Path(base), f"{base}/bin/python{ours}", shipped=True,
    )  # fmt: skip
    ctx = doctor._probe_context("application_1_0001", "default", ship, 40000, {}, Conf())
    spec = ctx["am-container-spec"]
    keys = [e["key"] for e in spec["local-resources"]["entry"]]
    assert keys == ["env", "pyhome"] and "credentials" not in spec
    command = spec["commands"]["command"]
    # as a job's AM: the venv assembled over the interpreter, the Python checked, then the probe
    assert command.startswith("echo ") and f". ./{nodepython.SHIPPED_VENV}.sh" in command
    assert command.index(nodepython.SHIPPED_PYTHON) > command.index("base64 -d | bash")
    assert command.rstrip().endswith(f"{base}/bin/python{ours} 1><LOG_DIR>/probe.stdout "
                                     "2><LOG_DIR>/probe.stderr")  # fmt: skip
    d = doctor.Doctor()
    here = {"path": ship.base_python, "present": True, "version": f"{ours}.1"}
    d._base_report({"base": here}, "worker1", ship, Conf())
    (check,) = d.checks
    assert check.ok and check.name == "venv's python on the nodes"
    assert check.detail.startswith(f"{ship.base_python} is on worker1 (Python {ours}.1): later")
    key = shipchoice.cluster_key(Conf())
    assert shipchoice.found(key, doctor.Path(base)).present
    d = doctor.Doctor()
    gone = {"path": ship.base_python, "present": False, "version": "", "error": "[Errno 2] No"}
    d._base_report({"base": gone}, "worker2", ship, Conf())
    assert d.checks[0].detail.endswith("is not on worker2 ([Errno 2] No): it goes with the job")
    assert shipchoice.found(key, doctor.Path(base)) == shipchoice.Found(
        False, "", "worker2", shipchoice.found(key, doctor.Path(base)).checked
    )
