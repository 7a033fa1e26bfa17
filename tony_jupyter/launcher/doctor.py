"""``tony-jupyter doctor`` and ``%tony doctor``: what a first job needs, checked from the
notebook's host and from one short probe container on the cluster, each check printed with
pass or fail and, when it fails, the fix. The probe runs what a job would run on the nodes:
where a job would pack a venv (``--pack-env``, or by default where the nodes are other hosts)
the probe's container localizes the same archives, the venv and, when it goes along
(``--ship-python``, shipchoice.py), its base interpreter, from the same HDFS cache (packed and
uploaded here if they are not there yet: the first job then finds them), and runs the probe
with that environment's Python; it also looks for the venv's base interpreter at its path on
the node, which decides ``--ship-python auto`` for later jobs. Nothing else is left behind: the
probe's application is killed (if it has not ended) and its HDFS write is removed. With
``MLFLOW_TRACKING_URI`` set, where the chief would log the job's MLflow run is checked too:
from here, and from the probe's node.

Without ``HADOOP_CONF_DIR`` it checks what the local backend needs.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import secrets
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from ..core.errors import TonyError
from ..core.shown import redacted
from .client import home as tony_home
from .yarn import probe

PROBE_APP_TYPE = "TONY-JUPYTER-DOCTOR"  # not a job: no listing shows it
PROBE_WAIT_S = 60.0  # for the probe's container to be given and to start
LOCALIZE_WAIT_S = 600.0  # more, where it localizes a packed venv (a TensorFlow one: minutes)
CONNECT_TIMEOUT_S = 3.0
UNREACHED_S = 10.0  # the probe's node answering no connection from here this long: a verdict
EPHEMERAL = (32768, 60999)  # Linux's default net.ipv4.ip_local_port_range
FRAMEWORKS = ("tensorflow", "torch", "jax")
MLFLOW_URI_ENV = "MLFLOW_TRACKING_URI"  # forwarded to the tasks (spec.py)
MLFLOW_SERVER = "MLflow tracking server"  # the probe's target's name
# MLflow's stores that are files on the chief's own disk ("" : a plain path)
LOCAL_STORES = ("", "file", "sqlite")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not run (an earlier check it needs failed)
    detail: str
    fix: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Shipment:
    """What a job would run on the nodes, as the probe runs it."""

    python: str  # the container's Python (a path on the node, or in the container)
    want: str  # the minor version it is to be
    what: str  # in words, for the report
    resources: dict = field(default_factory=dict)  # ARCHIVE entries: the venv, its interpreter
    base: Path | None = None  # a packed venv's base prefix (this host's path)
    base_python: str = ""  # the interpreter the venv's bin/python leads to, looked for on a node
    shipped: bool = False  # the base interpreter goes with the job
    fix: str = ""  # for a Python the node cannot run


@dataclass
class Doctor:
    python: str = ""  # the job's Python on the nodes ("": this kernel's, as a job would use)
    queue: str = "default"
    probe: bool = True
    checks: list[Check] = field(default_factory=list)
    pack_env: str | None = None  # a venv to pack ("": this kernel's; None: as a job decides)
    ship_python: str = "auto"  # --ship-python: whether its base interpreter goes with it

    def check(self, name: str, fn: Callable[[], str]) -> bool:
        """Run one check: ``fn`` returns what passed; a TonyError or OSError is the failure,
        its message naming the fix."""
        t = time.monotonic()
        try:
            detail = fn()
        except (TonyError, OSError) as e:
            self.checks.append(Check(name, False, str(e), seconds=time.monotonic() - t))
            return False
        self.checks.append(Check(name, True, detail, seconds=time.monotonic() - t))
        return True

    def fail(self, name: str, detail: str, fix: str) -> None:
        self.checks.append(Check(name, False, detail, fix))

    def skip(self, name: str, why: str) -> None:
        self.checks.append(Check(name, None, why))

    # --- the local backend ---------------------------------------------------------------

    def local(self) -> None:
        self.checks.append(
            Check("backend", True, "local (HADOOP_CONF_DIR is not set: jobs run on this host)")
        )
        self.check("home", _writable_home)
        found = [f for f in FRAMEWORKS if importlib.util.find_spec(f) is not None]
        if found:
            self.checks.append(Check("frameworks", True, ", ".join(found) + " importable"))
        else:
            self.fail(
                "frameworks",
                f"none of {', '.join(FRAMEWORKS)} is installed for {sys.executable}",
                f"{sys.executable} -m pip install tensorflow (or torch, or jax)",
            )
        if os.environ.get(MLFLOW_URI_ENV):
            self.mlflow(os.environ[MLFLOW_URI_ENV], [])  # the tasks run on this host

    # --- MLflow, when MLFLOW_TRACKING_URI is set (the chief logs the job's run there) ---------

    def mlflow(self, uri: str, node_hosts: list[str] | None) -> None:
        """From this host: an http(s) tracking URI answers as an MLflow server; a file store
        (a path, file:, sqlite:) is only seen by nodes that share this host's disk. The way
        from a node to a tracking server is the probe's (``_mlflow_target``)."""
        name = "mlflow tracking"
        u = urlparse(uri)
        if u.scheme in ("http", "https"):
            self.checks.append(_mlflow_answers(name, uri))
        elif u.scheme in LOCAL_STORES:
            self.checks.append(_mlflow_local_store(name, uri, node_hosts))
        else:
            self.skip(name, f"{MLFLOW_URI_ENV}={uri}: a {u.scheme}: store is not checked")

    # --- a YARN cluster --------------------------------------------------------------------

    def yarn(self) -> None:
        from ..core.hadoopconf import HadoopConf
        from .yarn import secure

        holder: dict = {}

        def conf() -> str:
            c = holder["conf"] = HadoopConf.load()
            return f"ResourceManager {c.rm}; WebHDFS {c.webhdfs}; user {c.user}"

        if not self.check("configuration", conf):
            return
        label = "kerberos login" if holder["conf"].secure else "cluster"

        def connect() -> str:
            c = holder["cluster"] = secure.connect()
            return f"logged in as {c.login.user()}" if c.login else "simple authentication"

        if not self.check(label, connect):
            return
        cluster = holder["cluster"]
        rm_ok = self.check("resourcemanager", lambda: _rm_info(cluster.rm))
        hdfs_ok = self.check("hdfs", lambda: _hdfs_write(cluster.staging))
        if rm_ok:
            self.check("queue", lambda: _queue(cluster.rm, self.queue))
            self.check("nodes", lambda: _nodes(cluster.rm))
        if os.environ.get(MLFLOW_URI_ENV):
            self.mlflow(os.environ[MLFLOW_URI_ENV], _node_hosts(cluster.rm) if rm_ok else None)
        if cluster.secure and rm_ok and hdfs_ok:
            self.check("delegation tokens", lambda: _tokens(cluster))
        if not self.probe:
            return
        if not rm_ok:
            self.skip("probe container", "the ResourceManager is not reachable")
            return
        self.run_probe(cluster)

    def shipment(self, cluster) -> Shipment:
        """What a job would run on the nodes: its Python, and the archives it localizes
        (packed and uploaded through the job's own staging and caches)."""
        from ..core import venvdir
        from ..core.nodepython import SHIPPED, SHIPPED_PYTHON, this_version
        from ..core.spec import JobSpec
        from .yarn import interpreter, packenv, shipchoice

        pack_env = "" if self.pack_env is None else str(venvdir.venv_root(self.pack_env or None))
        spec = JobSpec("doctor", (), python=self.python, pack_env=pack_env)
        spec = packenv.by_default(spec, _node_hosts(cluster.rm) or [])
        ours = this_version()
        if not spec.pack_env:
            python = self.python or sys.executable
            how = "--python" if self.python else "this kernel's, as a job runs it by default"
            fix = python_fix(sys.prefix, sys.base_prefix, ours)
            return Shipment(python, ours, f"{python} ({how})", fix=fix)
        venv = Path(spec.pack_env)
        key = shipchoice.cluster_key(cluster.conf)
        choice = shipchoice.decide(self.ship_python, venv, key)
        want = venvdir.venv_version(venv) or ours
        env_entry, env_info = cluster.staging.env_archive(venv)
        home = venvdir.pyvenv_cfg(venv).get("home", "")
        base_python = f"{home}/python{want}" if home else ""
        cached = "" if env_info.get("bytes_uploaded") else ", already on HDFS"
        what = f"the packed venv {venv} ({_mb(env_entry['size'])}{cached})"
        if choice.prefix is None:
            base = interpreter.base_prefix(venv)
            fix = python_fix(str(venv), "", want)
            if base is not None and interpreter.not_relocatable(base) is None:
                fix = (
                    f"--ship-python always (ships {base} with the venv), or --python PATH "
                    f"naming a Python {want} the nodes have"
                )
            return Shipment(
                packenv.PYTHON, want, f"{what} on the nodes' {base_python or 'Python'} "
                f"({choice.why})", {packenv.ENV_NAME: env_entry}, base, base_python, fix=fix,
            )  # fmt: skip
        py_entry, py_info = cluster.staging.python_archive(choice.prefix)
        cached = "" if py_info.get("bytes_uploaded") else ", already on HDFS"
        what += f" with its Python {choice.prefix} ({_mb(py_entry['size'])}{cached})"
        resources = {packenv.ENV_NAME: env_entry, SHIPPED: py_entry}
        return Shipment(
            SHIPPED_PYTHON, want, what, resources, choice.prefix, base_python, shipped=True,
            fix=f"yarn logs -applicationId APP shows why the shipped {choice.prefix} did not "
            "start; or --ship-python never with --python PATH naming a Python the nodes have",
        )  # fmt: skip

    def run_probe(self, cluster) -> None:
        from .yarn.rm import TERMINAL_APP_STATES

        holder: dict = {}

        def stage() -> str:
            holder["ship"] = self.shipment(cluster)
            return holder["ship"].what

        if not self.check("job's python", stage):
            self.skip("probe container", "the job's Python could not be staged")
            return
        ship: Shipment = holder["ship"]
        python = ship.python
        conf, rm = cluster.conf, cluster.rm
        targets = {**_targets(conf), **_mlflow_target(os.environ.get(MLFLOW_URI_ENV, ""))}
        # In Linux's default ephemeral range (net.ipv4.ip_local_port_range), where a job's AM
        # and TensorBoard get their ports: a firewall that blocks those blocks the probe too.
        port = random.randint(EPHEMERAL[0], EPHEMERAL[1] - probe.PORTS)
        t = time.monotonic()
        app_id = None
        try:
            app_id = rm.new_application()
            tokens = None
            if conf.secure and ship.resources:  # the NodeManager localizes them as the user
                from ..core.spec import JobSpec
                from .yarn import secure

                tokens = secure.job_tokens(cluster, JobSpec("doctor", ())).tokens
            rm.submit(_probe_context(app_id, self.queue, ship, port, targets, conf, tokens))
            wait = PROBE_WAIT_S + (LOCALIZE_WAIT_S if ship.resources else 0.0)
            report, node = _read_probe(rm, app_id, port, python, wait, ship.fix)
        except _ProbeFailed as e:
            self.fail(e.check, e.detail, e.fix)
            return
        except TonyError as e:
            self.fail("probe container", str(e), "")
            return
        finally:
            if app_id is not None:
                app = rm.app(app_id) or {}
                if app.get("state") not in TERMINAL_APP_STATES:
                    rm.kill(app_id)
        took = time.monotonic() - t
        self.checks.append(
            Check("probe container", True, f"ran on {node} in {took:.1f} s", seconds=took)
        )
        self._probe_report(report, node, ship, targets)
        if ship.base is not None:
            self._base_report(report, node, ship, cluster.conf)

    def _probe_report(self, report: dict, node: str, ship: Shipment, targets: dict) -> None:
        ours = ship.want
        theirs = ".".join(str(report.get("version", "")).split(".")[:2])
        if theirs == ours:
            self.checks.append(
                Check(
                    "python on the nodes",
                    True,
                    f"{ship.python} is Python {report['version']} on {node}"
                    + (" (unpacked by the NodeManager)" if ship.resources else ""),
                )
            )
        else:
            self.fail(
                "python on the nodes",
                f"{ship.python} on {node} is Python {report.get('version')}, the job's is {ours}: "
                "the cell's pickles and the job's packages need the same minor version",
                ship.fix,
            )
        self.checks.append(
            Check("notebook host -> node", True, f"reached the probe on {node} (as the Jupyter "
                  "server reaches an AM or a TensorBoard there)")
        )  # fmt: skip
        for hit in report.get("reached", []):
            name = f"node -> {targets.get(hit['address'], hit['address'])}"
            if hit.get("ok"):
                self.checks.append(Check(name, True, f"{hit['address']} in {hit.get('ms')} ms"))
            elif targets.get(hit["address"]) == MLFLOW_SERVER:
                host, _, port = hit["address"].rpartition(":")
                self.fail(
                    name,
                    f"{node} could not reach {hit['address']}: {hit.get('error')} (the chief "
                    f"logs the job's MLflow run there, from {MLFLOW_URI_ENV})",
                    f"a tracking server that listens on an address of {host} the nodes reach "
                    f"(mlflow server --host {host} --port {port}, not 127.0.0.1), and port "
                    f"{port} open from the cluster's nodes; or {MLFLOW_URI_ENV} naming one",
                )
            else:
                self.fail(
                    name,
                    f"{node} could not reach {hit['address']}: {hit.get('error')}",
                    "a job's AM on that node needs it: open that port from the cluster's nodes",
                )

    def _base_report(self, report: dict, node: str, ship: Shipment, conf) -> None:
        """Whether the packed venv's base interpreter is on the node at its path, kept for
        ``--ship-python auto`` (shipchoice.py); a check only where the job ships it (a venv
        on the nodes' own Python that is not there never reaches its report)."""
        from .yarn import shipchoice

        base = report.get("base")
        if not isinstance(base, dict) or ship.base is None:
            return
        found = shipchoice.Found(
            bool(base.get("present")), str(base.get("version") or ""), node, time.time()
        )
        shipchoice.remember(shipchoice.cluster_key(conf), ship.base, found)
        if not ship.shipped:
            return
        if found.present and found.version.startswith(ship.want + "."):
            later = (
                ": later jobs run the venv on the nodes' own (--ship-python auto)"
                if self.ship_python == "auto"
                else ""
            )
            detail = f"{ship.base_python} is on {node} (Python {found.version}){later}"
        else:
            why = f" ({base.get('error')})" if base.get("error") else ""
            if found.present:
                why = f" (Python {found.version}, not {ship.want})"
            detail = f"{ship.base_python} is not on {node}{why}: it goes with the job"
        self.checks.append(Check("venv's python on the nodes", True, detail))

    def run(self) -> list[Check]:
        from ..core.hadoopconf import RM_URL_ENV

        if os.environ.get("HADOOP_CONF_DIR") or os.environ.get(RM_URL_ENV):
            self.yarn()
        else:
            self.local()
        return self.checks


def _mb(size: int) -> str:
    mb = size / (1 << 20)
    return f"{mb:.1f} MB" if mb < 10 else f"{mb:.0f} MB"


class _ProbeFailed(Exception):
    def __init__(self, detail: str, fix: str, check: str = "probe container") -> None:
        super().__init__(detail)
        self.detail, self.fix, self.check = detail, fix, check


def _writable_home() -> str:
    d = tony_home()
    d.mkdir(parents=True, exist_ok=True)
    probe_file = d / f".doctor-{secrets.token_hex(4)}"
    probe_file.write_text("ok")
    probe_file.unlink()
    return f"{d} is writable"


def _rm_info(rm) -> str:
    info = rm.info()
    state = info.get("haState") or info.get("state")
    return f"{rm.address.urls[0] if len(rm.address.urls) == 1 else rm.address}: {state}, " + (
        f"Hadoop {info.get('hadoopVersion', '?')}"
    )


def _hdfs_write(staging) -> str:
    staging.check()
    staging.round_trip()
    return f"wrote, read back and removed 1 KiB under {staging.root} (NameNode and a DataNode)"


def _queue(rm, name: str) -> str:
    from ..core.errors import BackendError

    queues = rm.leaf_queues()
    q = queues.get(name)
    if q is None:
        raise BackendError(
            f"no leaf queue {name!r}; leaf queues: {', '.join(sorted(queues)) or 'none'}. "
            "Submit with --queue NAME"
        )
    if q.get("state", "RUNNING") != "RUNNING":
        raise BackendError(f"queue {name!r} is {q.get('state')}: it takes no application")
    used = q.get("usedCapacity", 0.0)
    return f"{name}: RUNNING, {used:.0f}% of its capacity in use"


def _nodes(rm) -> str:
    from ..core.errors import BackendError

    nodes = rm.nodes()
    if not nodes:
        raise BackendError(
            "no NodeManager is RUNNING: no container can start. Start the NodeManagers, or "
            "look at the RM's Nodes page for unhealthy ones"
        )
    mem = sum(int(n.get("availMemoryMB", 0)) for n in nodes)
    cores = sum(int(n.get("availableVirtualCores", 0)) for n in nodes)
    hosts = ", ".join(sorted(str(n.get("nodeHostName")) for n in nodes))
    return f"{len(nodes)} RUNNING ({hosts}): {mem} MB and {cores} vcores free"


def _node_hosts(rm) -> list[str] | None:
    try:
        return [str(n.get("nodeHostName")) for n in rm.nodes()]
    except TonyError:
        return None


def _tokens(cluster) -> str:
    renewer = cluster.conf.rm_principal
    cluster.rm.delegation_token(renewer)
    cluster.staging.delegation_token(renewer)
    return f"a ResourceManager and an HDFS delegation token, renewable by {renewer}"


def _targets(conf) -> dict[str, str]:
    """host:port -> what it is, for the probe to reach from its node."""
    out: dict[str, str] = {}
    fs = urlparse(conf.default_fs)
    if fs.scheme == "hdfs" and fs.hostname and fs.port:  # a nameservice has no port
        out[f"{fs.hostname}:{fs.port}"] = "NameNode (RPC)"
    for url in conf.rm.urls:
        u = urlparse(url)
        if u.hostname:
            out[f"{u.hostname}:{u.port or (443 if u.scheme == 'https' else 80)}"] = (
                "ResourceManager (web)"
            )
    return out


def _mlflow_target(uri: str) -> dict[str, str]:
    """The tracking server's host:port, for the probe to reach from its node (an http(s) URI
    only: a file store has no address)."""
    u = urlparse(uri)
    if u.scheme not in ("http", "https") or not u.hostname:
        return {}
    return {f"{u.hostname}:{u.port or (443 if u.scheme == 'https' else 80)}": MLFLOW_SERVER}


def _mlflow_answers(name: str, uri: str) -> Check:
    """Whether the tracking server at ``uri`` answers this host as MLflow's REST API does (the
    experiment the run goes to: found, or not yet made), with the credentials MLflow's client
    would send from this environment."""
    import requests

    u = urlparse(uri)
    where = f"{u.hostname}:{u.port or (443 if u.scheme == 'https' else 80)}"
    experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or "Default"
    headers, auth = {}, None
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        headers["Authorization"] = f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}"
    elif os.environ.get("MLFLOW_TRACKING_USERNAME"):
        auth = (
            os.environ["MLFLOW_TRACKING_USERNAME"],
            os.environ.get("MLFLOW_TRACKING_PASSWORD", ""),
        )
    verify: bool | str = os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or True
    if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        verify = False  # the user's own setting for MLflow's client, which the tasks use too
    t = time.monotonic()
    try:
        r = requests.get(
            uri.rstrip("/") + "/api/2.0/mlflow/experiments/get-by-name",
            params={"experiment_name": experiment},
            headers=headers,
            auth=auth,
            verify=verify,
            timeout=CONNECT_TIMEOUT_S * 2,
        )
    except requests.RequestException as e:
        return Check(
            name,
            False,
            f"{MLFLOW_URI_ENV}={uri}: no answer from {where} on this host ({type(e).__name__}: "
            f"{e})",
            f"start the tracking server (mlflow server --host ADDRESS --port "
            f"{where.rpartition(':')[2]}, ADDRESS one the nodes reach too), or set the URI of "
            "one that runs",
            time.monotonic() - t,
        )
    took = time.monotonic() - t
    try:
        body = r.json()
    except ValueError:
        body = None  # not MLflow's JSON
    body = body if isinstance(body, dict) else None
    if r.status_code in (401, 403):
        return Check(
            name,
            False,
            f"the tracking server at {where} refused this host (HTTP {r.status_code})",
            "its credentials: MLFLOW_TRACKING_TOKEN (or MLFLOW_TRACKING_USERNAME and _PASSWORD) "
            "here, and passed to the job with --conf tony.containers.envs=NAME=VALUE (tony-jupyter "
            "forwards no secret by itself)",
            took,
        )
    found = r.status_code == 200 and body is not None and "experiment" in body
    if found or (body or {}).get("error_code") == "RESOURCE_DOES_NOT_EXIST":
        made = "exists" if found else "does not exist yet: the first run makes it"
        return Check(name, True, f"{uri} answers; experiment {experiment!r} {made}", seconds=took)
    return Check(
        name,
        False,
        f"{where} answered HTTP {r.status_code} to MLflow's REST API"
        + ("" if body is not None else ", not MLflow's JSON")
        + f": {' '.join(r.text.split())[:200]}",
        f"{MLFLOW_URI_ENV} naming an MLflow tracking server (http://HOST:PORT of `mlflow server`)",
        took,
    )


def _mlflow_local_store(name: str, uri: str, node_hosts: list[str] | None) -> Check:
    """A store in files: the chief writes the run on its node's disk, which only a node on
    this host (or one that mounts the same path) shares."""
    from .yarn.packenv import is_this_host, this_hosts_addresses

    if node_hosts is None:
        return Check(name, None, f"{MLFLOW_URI_ENV}={uri}: the nodes are not known (no RM)")
    here = this_hosts_addresses()
    elsewhere = sorted(h for h in node_hosts if not is_this_host(h, here))
    if not elsewhere:
        return Check(name, True, f"{uri}: a store in files, which the nodes (this host) share")
    return Check(
        name,
        False,
        f"{MLFLOW_URI_ENV}={uri} is a store in files, but the nodes ({', '.join(elsewhere[:3])}"
        f"{', ...' if len(elsewhere) > 3 else ''}) are other hosts: the chief would log the "
        "job's run on its node's disk, never seen here",
        "run an MLflow tracking server the nodes reach (mlflow server --host ADDRESS --port "
        f"PORT) and set {MLFLOW_URI_ENV}=http://HOST:PORT",
    )


def _probe_context(app_id, queue, ship: Shipment, port, targets, conf, tokens=None) -> dict:
    """The probe's submission: with a packed venv, its archives localized as a job's are, and
    its command preceded by what a job's is (nodepython.launch: the check of the job's Python,
    the venv assembled over a shipped interpreter)."""
    from ..core import nodepython
    from .yarn import secure
    from .yarn.staging import local_resource_json

    command = probe.command(ship.python, port, list(targets), ship.base_python)
    if ship.resources:
        command = nodepython.launch(ship.python, ship.want, command, "<LOG_DIR>/probe.stderr")
    container: dict = {
        "environment": {"entry": [{"key": "HADOOP_USER_NAME", "value": conf.user}]},
        "commands": {"command": command},
    }
    if ship.resources:
        container["local-resources"] = local_resource_json(ship.resources)
    if tokens is not None:
        container["credentials"] = secure.credentials_json(tokens)
    return {
        "application-id": app_id,
        "application-name": "tony-jupyter doctor",
        "application-type": PROBE_APP_TYPE,
        "queue": queue,
        "resource": {"memory": 128, "vCores": 1},
        "max-app-attempts": 1,
        "am-container-spec": container,
    }


def python_fix(prefix: str, base_prefix: str, version: str) -> str:
    """The fix for a job's Python the nodes lack, for the environment this kernel runs in:
    --pack-env only where it works (a venv; its interpreter goes with it when it is a prefix of
    one CPython, as pyenv's and uv's are: launcher/yarn/interpreter.py)."""
    from pathlib import Path

    from .yarn import interpreter

    other = f"--python PATH naming a Python {version} the nodes have"
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return (
            f"{other}, or a venv (python -m venv) for the kernel, which --pack-env ships: "
            "conda environments are not shipped (conda-pack is not supported)"
        )
    if prefix == base_prefix:
        return f"{other}, or run the kernel in a venv (python -m venv), which --pack-env ships"
    base = interpreter.base_prefix(Path(prefix))
    why = interpreter.not_relocatable(base) if base else "the venv names no base interpreter"
    if why is None:
        return f"--pack-env (ship this kernel's venv; its Python {base} goes with it), or {other}"
    return (
        f"--pack-env VENV naming a venv made from the nodes' own Python {version} (this "
        f"kernel's venv needs its Python at {base} on every node: {why}), or {other}"
    )


def _ended(app: dict, node: str, python: str, fix: str = "") -> _ProbeFailed:
    """The probe's application ended before it reported: why, from its diagnostics."""
    why = " ".join(str(app.get("diagnostics", "")).split())
    code = re.search(r"[Ee]xit ?[Cc]ode: ?(-?\d+)", why)
    if code and code.group(1) == "127":
        ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return _ProbeFailed(
            f"the job's Python {python} is not on {node}, or does not run there (the probe's "
            "container exited with code 127; its stderr, in yarn logs -applicationId "
            f"{app.get('id')}, says which)",
            (fix or python_fix(sys.prefix, sys.base_prefix, ours)).replace(
                "APP", str(app.get("id"))
            ),
        )
    return _ProbeFailed(
        f"the probe ended on {node} before it reported"
        + (f" (exit code {code.group(1)})" if code else "")
        + f": {why[:300] or app.get('finalStatus', '')}",
        "its stderr is in the container's logs: yarn logs -applicationId " + str(app.get("id")),
    )


def _read_probe(
    rm, app_id: str, port: int, python: str = "", wait: float | None = None, fix: str = ""
) -> tuple[dict, str]:
    """The probe's report, read from its node within ``wait`` seconds (default
    ``PROBE_WAIT_S``); :class:`_ProbeFailed` naming what went wrong."""
    import json

    from .yarn.rm import TERMINAL_APP_STATES

    wait = PROBE_WAIT_S if wait is None else wait
    deadline = time.monotonic() + wait
    node = ""
    last, since = "", 0.0
    while time.monotonic() < deadline and not (since and time.monotonic() - since > UNREACHED_S):
        app = rm.app(app_id) or {}
        node = (app.get("amHostHttpAddress") or "").rpartition(":")[0] or node
        if app.get("state") in TERMINAL_APP_STATES:
            raise _ended(app, node or "no node", python, fix)
        if node:
            for p in range(port, port + probe.PORTS):
                try:
                    with socket.create_connection((node, p), timeout=CONNECT_TIMEOUT_S) as s:
                        s.settimeout(10)
                        line = s.makefile("rb").readline()
                    return json.loads(line), node
                except (ConnectionRefusedError, ValueError):
                    continue  # not this port, or not listening yet
                except OSError as e:  # no route, prohibited, timed out: a network's doing
                    last, since = f"{node}:{p}: {e}", since or time.monotonic()
                    break
        time.sleep(0.2)
    if node and last:
        raise _ProbeFailed(
            f"this host could not reach the probe on {node} ({last})",
            "the Jupyter server reaches a job's AM and TensorBoard on the nodes: open the "
            "NodeManagers' hosts to this one (ports 1024-65535 of the containers)",
            check="notebook host -> node",
        )
    if node:
        raise _ProbeFailed(
            f"the probe started on {node} but never listened within {wait:g} s",
            "look at its logs: yarn logs -applicationId " + app_id,
        )
    raise _ProbeFailed(
        f"YARN gave the probe no container within {wait:g} s (queue full, or no node "
        "fits 128 MB and 1 vcore)",
        "look at the queue in the ResourceManager's UI, or try again when it has room",
    )


def text(checks: list[Check], seconds: float) -> str:
    marks = {True: "pass", False: "FAIL", None: "skip"}
    width = max((len(c.name) for c in checks), default=0)
    lines = []
    for c in checks:
        lines.append(f"  {marks[c.ok]}  {c.name.ljust(width)}  {c.detail}")
        if c.fix:
            lines.append(f"        {' ' * width}  fix: {c.fix}")
    passed = sum(c.ok is True for c in checks)
    failed = sum(c.ok is False for c in checks)
    lines.append(f"{passed} passed, {failed} failed in {seconds:.1f} s")
    # kept in a notebook by %tony doctor: no tracking URI's password in it
    return redacted("\n".join(lines))


def doctor_parser():
    """``doctor``'s flags: the one declaration its usage line and the docs are made from."""
    import argparse

    p = argparse.ArgumentParser(
        prog="tony-jupyter doctor",
        add_help=False,
        exit_on_error=False,
        description="Check what a first job needs, from this host and from one probe container.",
    )
    p.add_argument(
        "--python",
        default="",
        metavar="PATH",
        help="the Python the probe container runs, as a job's --python would (default: this "
        "kernel's)",
    )
    p.add_argument(
        "--queue",
        default="default",
        metavar="NAME",
        help="the YARN queue to check and to run the probe in (default: default)",
    )
    p.add_argument(
        "--pack-env",
        nargs="?",
        const="",
        default=None,
        metavar="VENV",
        help="run the probe in this venv packed as a job's --pack-env is (default: the "
        "kernel's; without the flag, as a job decides: packed where the nodes are other hosts)",
    )
    p.add_argument(
        "--ship-python",
        default="auto",
        choices=("auto", "always", "never"),
        metavar="WHEN",
        help="with a packed venv, auto, always or never: whether its base interpreter goes "
        "with it, as a job's --ship-python (default: auto)",
    )
    p.add_argument(
        "--no-probe", action="store_true", help="skip the probe container: this host's checks only"
    )
    return p


def doctor(words: list[str]) -> tuple[str, bool]:
    """Run the checks for ``tony-jupyter doctor [--python PATH] [--queue NAME] [--pack-env
    [VENV]] [--ship-python WHEN] [--no-probe]``; the report and whether all passed."""
    import argparse

    from ..core.errors import SpecError

    p = doctor_parser()
    usage = " ".join(p.format_usage().removeprefix("usage: tony-jupyter ").split())
    try:
        args, extra = p.parse_known_args(words)
    except argparse.ArgumentError as e:
        raise SpecError(f"{usage}: {e}") from None
    if extra:
        raise SpecError(f"{usage}: unknown {' '.join(extra)!r}")
    t = time.monotonic()
    if args.python and args.pack_env is not None:
        raise SpecError(
            f"{usage}: --python and --pack-env contradict each other (a packed venv brings "
            "its own Python); keep one"
        )
    doc = Doctor(args.python, args.queue, not args.no_probe)
    doc.pack_env, doc.ship_python = args.pack_env, args.ship_python
    checks = doc.run()
    return text(checks, time.monotonic() - t), all(c.ok is not False for c in checks)
