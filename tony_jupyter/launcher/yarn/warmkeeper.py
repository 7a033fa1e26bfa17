"""The kernel's warm AM on YARN (opt-in: ``TONY_JUPYTER_WARM_YARN=<idle seconds>``).

After a YARN job is submitted, the kernel starts one more application: a warm AM
(am/yarn/warmapp.py) registered with the RM and holding one started container per task of that
job, each with a spare executor imported and waiting. The kernel's next job of the same shape
is handed to it (its files in one HTTP request) instead of being submitted: it skips the RM's
accept, the AM container's allocation and localization, the JVM's and Python's start, and the
executors' containers. It holds cluster resources while it waits, hence opt-in; unused for its
idle seconds it gives them back by itself, and the kernel kills it when it exits, when a job of
another shape comes, or with ``TONY_JUPYTER_WARM=0``.

A job goes the usual way (and the warm AM is let go) when its shape differs (queue, AM and
task sizes, task counts, node labels, Python, packed environment, name), on a Kerberized cluster
(its tokens are the job's own), with AM retries (a new attempt would start from the warm AM's
files), with data shards (localized per task), or when the directory it ships weighs more than
``SRC_MAX_BYTES`` packed (it travels in the hand-over, to the AM and each spare executor).
"""

from __future__ import annotations

import atexit
import base64
import os
import threading
import time
from dataclasses import dataclass

import requests

from ...core import jobdir, srcdir
from ...core import warmproc as warm
from ...core.bundle import Bundle, BundleInfo
from ...core.errors import BackendError
from ...core.protocol import WarmJob, WarmStatus, new_token, token_verifier
from ...core.spec import JobSpec
from .. import outcome
from ..client import JobRecord
from . import packenv, secure
from .amstart import AM_START_TIMEOUT_S, am_url_from_report, wait_for_am
from .appmaster import PRIVATE_FILES, am_context, bundle_files, cleanup

WARM_TAG = "tony-jupyter-warm"
WHO = "the warm AM"  # in what its launch's outcome says (launcher/outcome.py)
# After a job's submission: its own tasks start first (a warm AM's JVM and Python start take
# about as much CPU as they need: measured, 1 s slowed a 4-worker job's start by ~1 s).
START_DELAY_S = 5.0
SRC_MAX_BYTES = 8 << 20


@dataclass
class WarmAM:
    app_id: str
    token: str
    key: tuple
    cluster: secure.Cluster


_lock = threading.Lock()
_warm: WarmAM | None = None
_starting: threading.Thread | None = None


def idle_s() -> float:
    """The warm AM's idle time, 0 when off."""
    if not warm.enabled():
        return 0.0
    try:
        return max(0.0, float(os.environ.get(warm.YARN_IDLE, "") or 0))
    except ValueError:
        return 0.0


def key(spec: JobSpec, cluster: secure.Cluster, env_entry: dict | None) -> tuple:
    tasks = tuple(
        (t.type, t.instances, t.memory_mb, t.vcores, t.gpus, t.node_label) for t in spec.tasks
    )
    env = (env_entry or {}).get("resource")
    return (
        cluster.conf.rm.url, cluster.conf.user, spec.name, spec.queue, spec.am_memory_mb,
        spec.am_vcores, tasks, spec.python, env,
    )  # fmt: skip


def usable(spec: JobSpec, bundle: Bundle, cluster: secure.Cluster) -> bool:
    return not (cluster.secure or spec.am_retries or bundle.shards)


def take(
    cluster: secure.Cluster,
    spec: JobSpec,
    bundle: Bundle,
    argv: list[str] | None,
    env_entry: dict | None,
) -> JobRecord | None:
    """Hand the job to the warm AM if one of its shape waits; else None (and let it go)."""
    global _warm
    if not idle_s():
        discard()  # turned off since it started
        return None
    if _starting is not None:
        _starting.join(60)
    with _lock:
        spare, _warm = _warm, None
    if spare is None:
        return None
    if not (usable(spec, bundle, cluster) and spare.key == key(spec, cluster, env_entry)):
        _let_go(spare)
        return None
    rm = cluster.rm
    record_dir = None
    try:
        url = wait_for_url(rm, spare.app_id)
        files = bundle_files(spec, bundle, argv, spare.token)
        files.pop(jobdir.TOKEN)
        if bundle.src is not None:  # the shipped directory in the hand-over (am/yarn/warmapp.py)
            files[jobdir.SRC_ARCHIVE] = srcdir.archive(bundle.src)
            if len(files[jobdir.SRC_ARCHIVE]) > SRC_MAX_BYTES:
                raise BackendError("the shipped directory is too large to hand over")
        body = WarmJob({n: base64.b64encode(b).decode() for n, b in files.items()})
        r = requests.post(
            f"{url}/api/v1/spare/job",
            json=body.to_json(),
            headers={"Authorization": f"Bearer {spare.token}"},
            timeout=30,
        )
        if r.status_code != 200:
            raise BackendError(f"the warm AM refused the job: HTTP {r.status_code}")
    except (BackendError, requests.RequestException):
        _let_go(spare)
        return None  # the usual way
    try:
        record = JobRecord.create(spare.app_id, spare.token, token_in_dir=True)
        record_dir = record.dir
        info = cluster.job_info(spare.app_id, submitted=time.time(), warm=True)
        info.write(record.layout.yarn_info)
        record.write_spec(spec)
        info = info.am_started(wait_for_am(rm, spare.app_id, spare.token))
        info.write(record.layout.yarn_info)
    except BaseException:
        cleanup(rm, cluster.staging, spare.app_id, True, record_dir)
        raise
    return record


def wait_for_url(rm, app_id: str) -> str:
    """The warm AM's URL once it registered; else why not, worded, as a BackendError."""
    return outcome.started(warm_am_registered(rm, app_id)).url


def warm_am_registered(rm, app_id: str) -> outcome.Outcome:
    """Started once the warm AM's address is in its report, or why not."""
    deadline = time.monotonic() + AM_START_TIMEOUT_S
    app: dict = {}
    while time.monotonic() < deadline:
        app = rm.app(app_id) or {}
        url = am_url_from_report(app)
        if url:
            return outcome.Started(url)
        if app.get("state") in ("FINISHED", "FAILED", "KILLED"):
            state = f"{app.get('state')}/{app.get('finalStatus')}"
            diagnostics = app.get("diagnostics", "")
            return outcome.AmExited(app_id=app_id, state=state, diagnostics=diagnostics, am=WHO)
        time.sleep(0.05)
    return outcome.TimedOut(AM_START_TIMEOUT_S, app_id=app_id, app=app, am=WHO)


def replenish(cluster: secure.Cluster, spec: JobSpec, bundle: Bundle, env_entry) -> None:
    """Start the next warm AM, shaped as ``spec``, in the background (when on and usable)."""
    global _starting
    idle = idle_s()
    if not idle or not usable(spec, bundle, cluster):
        return
    _starting = threading.Thread(
        target=_start, args=(cluster, spec, env_entry, idle), daemon=True, name="tony-warm-yarn"
    )
    _starting.start()


def _start(cluster: secure.Cluster, spec: JobSpec, env_entry: dict | None, idle: float) -> None:
    global _warm
    time.sleep(START_DELAY_S)
    rm, staging = cluster.rm, cluster.staging
    app_id = None
    try:
        app_id = rm.new_application()
        token = new_token()
        files = {
            jobdir.SPEC: spec.to_json().encode(),
            jobdir.ENV: spec.env_json().encode(),  # the template's variables, for its spares
            # Its SHA-256 only: other containers can read the warm AM's files.
            jobdir.TOKEN_VERIFIER: token_verifier(token).encode(),
            jobdir.BUNDLE: BundleInfo().dumps().encode(),  # no cell: a template
        }
        resources = staging.upload(app_id, files, private=PRIVATE_FILES)
        executor_resources = {}
        if env_entry is not None:
            executor_resources[packenv.ENV_NAME] = resources[packenv.ENV_NAME] = env_entry
        resources[jobdir.RESOURCES] = staging.upload_json(
            app_id, jobdir.RESOURCES, executor_resources
        )
        ctx = am_context(cluster.conf, spec, app_id, staging.job_dir(app_id), resources)
        am = ctx["am-container-spec"]
        am["commands"]["command"] = am["commands"]["command"].replace(
            "-m tony_jupyter.am ", "-m tony_jupyter.am --spare-yarn ", 1
        )
        am["environment"]["entry"].append({"key": warm.YARN_IDLE, "value": f"{idle:g}"})
        ctx["max-app-attempts"] = 1  # a new attempt would not know the job it was handed
        ctx["application-tags"] = {"tag": ["tony-jupyter", WARM_TAG]}
        rm.submit(ctx)
    except BaseException as e:  # noqa: BLE001 - a warm AM is an optimisation: never an error
        if app_id is not None:
            _let_go(WarmAM(app_id, "", (), cluster))
        print(f"tony-jupyter: no warm AM on YARN: {e}")
        return
    fresh = WarmAM(app_id, token, key(spec, cluster, env_entry), cluster)
    with _lock:
        old, _warm = _warm, fresh
    if old is not None:
        _let_go(old)


def _let_go(spare: WarmAM) -> None:
    """Kill the warm AM's application (its containers go back to YARN) and its staging."""
    try:
        spare.cluster.rm.kill(spare.app_id)
    except BackendError:
        pass
    try:
        spare.cluster.staging.remove(spare.app_id)
    except BackendError:
        pass


def discard() -> None:
    """Let the warm AM go, if there is one (at the kernel's exit too)."""
    global _warm
    if _starting is not None:
        _starting.join(30)
    with _lock:
        spare, _warm = _warm, None
    if spare is not None:
        _let_go(spare)


def current() -> WarmAM | None:
    with _lock:
        return _warm


def ready(spare: WarmAM) -> int:
    """How many spare executors of ``spare`` wait for a task now (0 while it starts)."""
    try:
        url = am_url_from_report(spare.cluster.rm.app(spare.app_id) or {})
        if not url:
            return 0
        r = requests.get(
            f"{url}/api/v1/spare/status",
            headers={"Authorization": f"Bearer {spare.token}"},
            timeout=5,
        )
        return WarmStatus.checked(r.json()).waiting if r.status_code == 200 else 0
    except (requests.RequestException, BackendError, ValueError):
        return 0


atexit.register(discard)
