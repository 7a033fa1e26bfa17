"""The YARN backend, client side: check, stage on HDFS, submit through the RM's REST API, and
wait until the AM serves. HTTP only: the notebook host needs no JVM and no Hadoop install.

Anything that goes wrong from the first write on (including Ctrl-C) kills the application and
deletes the staging and record directories, so a failed submission leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import sys
import time

import requests

from ... import retention, shards
from ...bundle import Bundle
from ...errors import BackendError
from ...protocol import ExecutorEnv
from ...spec import JobSpec
from ..client import JobRecord, jobs_dir
from . import packenv, secure
from .conf import HadoopConf
from .rm import APP_TYPE, TERMINAL_APP_STATES, RMClient
from .staging import local_resource_json

AM_START_TIMEOUT_S = 180.0
# Files every executor localizes too (spec.json: the chief's MLflow run logs it); the token
# and resources only the AM needs.
EXECUTOR_FILES = ("cell.py", "names.pkl", "bundle.json", "spec.json")
SRC_NAME = "src"  # the shipped directory, an ARCHIVE each executor localizes (executor/cell.py)


def _bundle_files(spec: JobSpec, bundle: Bundle, argv: list[str] | None, token: str) -> dict:
    meta: dict = {
        "filename": bundle.filename,
        "pull": list(spec.pull),
        "pushed": list(bundle.pushed),
    }
    if argv:
        meta["argv"] = argv
    shard_files: dict[str, bytes] = {}
    if bundle.src is not None:
        meta["src"] = bundle.src.meta()
    if bundle.shards is not None:
        # Parquet parts at the same relative paths as the local backend's; each container
        # localizes only the parts its task reads (YarnProvider), the AM none.
        meta["shards"], shard_files = shards.staged(bundle.shards)
    return {
        "spec.json": spec.to_json().encode(),
        "token": token.encode(),
        "cell.py": bundle.source.encode(),
        "names.pkl": bundle.names,
        "bundle.json": json.dumps(meta).encode(),
        **shard_files,
    }


def _executor_file(name: str) -> bool:
    return name in EXECUTOR_FILES or name.startswith(shards.SHARDS_DIR + "/")


def am_context(
    conf: HadoopConf,
    spec: JobSpec,
    app_id: str,
    staging_dir: str,
    resources: dict,
    tokens: dict[str, str] | None = None,
) -> dict:
    # --pack-env: the venv localized as the ARCHIVE "env" (packenv.py), in every container.
    python = packenv.PYTHON if spec.pack_env else (spec.python or sys.executable)
    env = {
        # The AM starts a JVM (JPype) for AMRMClient/NMClient on the cluster's own classpath.
        "CLASSPATH": "<CPS>".join(conf.app_classpath),
        "TONY_JOB_ID": app_id,
        "TONY_STAGING_DIR": f"{conf.default_fs.rstrip('/')}{staging_dir}",
        "TONY_PYTHON": python,
        # Passed on to the executors: tony_jupyter.data reads hdfs:// and checkpoints sync here.
        "TONY_WEBHDFS_URL": conf.webhdfs.url,
        "PYTHONUNBUFFERED": "1",
        retention.DAYS_ENV: f"{retention.days():g}",  # the AM prunes the history on HDFS
    }
    if conf.secure:
        # The AM's JVM and the tasks act as the user through the credentials' tokens;
        # a krb5.conf elsewhere than /etc (as this host's) goes along for the AM's JVM.
        env[ExecutorEnv.var("secure")] = "1"
        if os.environ.get("KRB5_CONFIG"):
            env["KRB5_CONFIG"] = os.environ["KRB5_CONFIG"]
    else:
        env["HADOOP_USER_NAME"] = conf.user
    container: dict = {
        "local-resources": local_resource_json(resources),
        "environment": {"entry": [{"key": k, "value": v} for k, v in env.items()]},
        "commands": {"command": None},
    }
    if conf.secure:
        container["credentials"] = secure.credentials_json(tokens or {})
        container["application-acls"] = secure.acls_json(conf.user)
    cmd = (
        f"{shlex.quote(python)} -m tony_jupyter.am {{{{PWD}}}} --provider yarn "
        "--host 0.0.0.0 --advertise {{NM_HOST}} 1><LOG_DIR>/am.stdout 2><LOG_DIR>/am.stderr"
    )
    return {
        "application-id": app_id,
        "application-name": spec.name,
        "application-type": APP_TYPE,
        "application-tags": {"tag": ["tony-jupyter"]},
        "queue": spec.queue,
        "resource": {"memory": spec.am_memory_mb, "vCores": spec.am_vcores},
        # A lost AM is replaced by YARN's next application attempt, which recovers the job
        # from the event log in staging (tony.am.retry-count; the RM caps it at its own
        # yarn.resourcemanager.am.max-attempts). The old attempt's containers go with it.
        "max-app-attempts": 1 + spec.am_retries,
        "unmanaged-AM": False,
        "keep-containers-across-application-attempts": False,
        "am-container-spec": {**container, "commands": {"command": cmd}},
    }


def submit(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    cluster = secure.connect(spec)  # on a secure cluster: logged in, or a clear error
    conf, rm, staging = cluster.conf, cluster.rm, cluster.staging
    rm.check(spec)  # queue, labels, sizes: before anything exists
    staging.check()
    # Delegation tokens before the application exists: one that cannot be had leaves nothing.
    tokens = secure.job_tokens(cluster, spec) if cluster.secure else None
    app_id, submitted, record_dir = None, False, None
    started = time.time()
    env_entry, env_info = None, None
    if spec.pack_env:
        # Before the application exists: packing a large venv takes a while, and a failure
        # here leaves nothing to clean up (the cache only ever holds complete archives).
        env_entry, env_info = staging.env_archive(packenv.venv_root(spec.pack_env))
    src_entry, src_info = staging.src_archive(bundle.src) if bundle.src else (None, None)
    try:
        app_id = rm.new_application()
        token = secrets.token_urlsafe(32)
        files = _bundle_files(spec, bundle, argv, token)
        resources = staging.upload(app_id, files, private=("token",))
        executor_resources = {k: v for k, v in resources.items() if _executor_file(k)}
        resources = {k: v for k, v in resources.items() if not k.startswith(shards.SHARDS_DIR)}
        if env_entry is not None:
            executor_resources[packenv.ENV_NAME] = resources[packenv.ENV_NAME] = env_entry
        if src_entry is not None:
            executor_resources[SRC_NAME] = src_entry  # the executors' only: the AM runs none
        resources["resources.json"] = staging.upload_json(
            app_id, "resources.json", executor_resources
        )
        record_dir = jobs_dir() / app_id
        record_dir.mkdir(mode=0o700)
        (record_dir / "token").touch(mode=0o600)
        (record_dir / "token").write_text(token)
        yarn_info = {
            "app_id": app_id,
            "rm_url": conf.rm.url,
            "webhdfs_url": conf.webhdfs.url,
            "default_fs": conf.default_fs,
            "user": conf.user,
            **cluster.record(),
            "staging": staging.job_dir(app_id),
            "submitted": started,
        }
        if env_info is not None:
            yarn_info["pack_env"] = env_info  # bytes_uploaded: 0 when the hash was cached
        if src_info is not None:
            yarn_info["src"] = src_info
        (record_dir / "yarn.json").write_text(json.dumps(yarn_info))
        (record_dir / "spec.json").write_text(spec.to_json())  # last: it makes the dir a job
        submitted = True  # from here a half-done submit may have created the app: kill it
        creds = tokens.tokens if tokens else None
        rm.submit(am_context(conf, spec, app_id, staging.job_dir(app_id), resources, creds))
        url = wait_for_am(rm, app_id, token)
        yarn_info["am_url"] = url
        yarn_info["am_up"] = time.time()
        (record_dir / "yarn.json").write_text(json.dumps(yarn_info))
        if tokens:  # new tokens before these reach their maximum lifetime
            due = tokens.refresh_time()
            secure.TokenKeeper.get().watch(app_id, record_dir, spec, yarn_info, due)
    except BaseException:  # KeyboardInterrupt included: leave no app, no staging, no record
        _cleanup(rm, staging, app_id, submitted, record_dir)
        raise
    return JobRecord(app_id, record_dir)


def _cleanup(rm, staging, app_id, submitted, record_dir) -> None:
    if app_id and submitted:
        try:
            rm.kill(app_id)
        except BackendError:
            pass
    if app_id:
        try:
            staging.remove(app_id)
        except BackendError:
            pass
    if record_dir is not None:
        shutil.rmtree(record_dir, ignore_errors=True)


def wait_for_am(rm: RMClient, app_id: str, token: str) -> str:
    """Until the AM has registered (its address in the app report) and answers its API."""
    deadline = time.monotonic() + AM_START_TIMEOUT_S
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    app: dict = {}
    while time.monotonic() < deadline:
        app = rm.app(app_id) or {}
        state = app.get("state")
        if state in TERMINAL_APP_STATES and _queue_refused(app):
            raise BackendError(
                f"YARN refused the job in queue {app.get('queue')!r}: "
                f"{' '.join(app.get('diagnostics', '').split())[:500]}. Submit to a queue "
                f"{app.get('user')} may use (--queue NAME, tony.yarn.queue), or ask the "
                "cluster's administrators for access to this one"
            )
        if state in TERMINAL_APP_STATES:
            raise BackendError(
                f"the job's AM ended before it started serving ({app_id} {state}/"
                f"{app.get('finalStatus')}): {app.get('diagnostics', '').strip()[:1500]}"
                + am_log_tail(app)
            )
        url = am_url_from_report(app)
        if url:
            try:
                if session.get(f"{url}/api/v1/job", timeout=5).status_code == 200:
                    return url
            except requests.RequestException:
                pass
        time.sleep(0.1)
    raise BackendError(
        f"the job's AM did not start within {AM_START_TIMEOUT_S:g} s ({app_id} is "
        f"{app.get('state')}: {app.get('diagnostics', '')[:500]}); the queue may be full. "
        "The application was killed."
    )


def _queue_refused(app: dict) -> bool:
    diag = (app.get("diagnostics") or "").lower()
    return "permission to submit" in diag or "cannot submit applications" in diag


def am_url_from_report(app: dict) -> str | None:
    # The AM registers its HTTP port as the "RPC port": the report then names host:port.
    addr = app.get("amRPCAddress") or ""
    if (
        app.get("state") == "RUNNING"
        and re.match(r"^[^:\s]+:\d+$", addr)
        and not addr.endswith(":-1")
    ):
        return f"http://{addr}"
    return None


def am_log_tail(app: dict, limit: int = 3000) -> str:
    """The AM container's stderr through the NodeManager's REST API, if it still has it."""
    m = re.match(r"^(https?://[^/]+)/node/containerlogs/([^/]+)/", app.get("amContainerLogs", ""))
    if not m:
        return ""
    base, cid = m.groups()
    texts = []
    for name in ("am.stderr", "am.stdout"):
        try:
            r = requests.get(f"{base}/ws/v1/node/containerlogs/{cid}/{name}", timeout=5)
        except requests.RequestException:
            continue
        if r.status_code == 200 and r.text.strip():
            texts.append(f"--- {name} ({cid}) ---\n{r.text[-limit:]}")
    return ("\n" + "\n".join(texts)) if texts else ""
