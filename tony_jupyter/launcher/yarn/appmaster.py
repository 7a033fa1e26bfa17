"""The AM's application on YARN, as the kernel makes it: the bundle's files and the AM container's
launch context for the RM's REST API, and their cleanup when a submission does not come through.
Used by the usual submission (backend.py) and the warm AM (warmkeeper.py); the wait until the AM
serves is amstart.py's."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from ...core import jobdir, nodepython, retention, shards, venvdir
from ...core.bundle import Bundle, BundleInfo
from ...core.errors import BackendError
from ...core.hadoopconf import HadoopConf
from ...core.protocol import ExecutorEnv, token_verifier
from ...core.spec import JobSpec
from . import packenv, secure, transport
from .rm import APP_TYPE
from .staging import local_resource_json

# Files every executor localizes too (spec.json: the chief's MLflow run logs it); the token's
# verifier and resources only the AM needs.
EXECUTOR_FILES = (jobdir.CELL, jobdir.NAMES, jobdir.BUNDLE, jobdir.SPEC, jobdir.CA_BUNDLE)
# Readable on HDFS by the job's user only (the AM's container is given the verifier, not the
# token; the token stays in staging for a record recovered from the RM).
PRIVATE_FILES = (jobdir.TOKEN, jobdir.TOKEN_VERIFIER, jobdir.ENV)


def bundle_files(spec: JobSpec, bundle: Bundle, argv: list[str] | None, token: str) -> dict:
    manifest: dict | None = None
    shard_files: dict[str, bytes] = {}
    if bundle.shards is not None:
        # Parquet parts at the same relative paths as the local backend's; each container
        # localizes only the parts its task reads (YarnProvider), the AM none.
        manifest, shard_files = shards.staged(bundle.shards)
    meta = BundleInfo.of(spec.pull, bundle, argv, manifest)
    return {
        jobdir.SPEC: spec.to_json().encode(),
        jobdir.ENV: spec.env_json().encode(),  # the AM's only (600), never in the history
        jobdir.TOKEN: token.encode(),  # on HDFS for a record recovered from the RM, not localized
        jobdir.TOKEN_VERIFIER: token_verifier(token).encode(),  # what the AM is given instead
        jobdir.CELL: bundle.source.encode(),
        jobdir.NAMES: bundle.names,
        jobdir.BUNDLE: meta.dumps().encode(),
        **shard_files,
        **transport.shipped_ca_bundle(jobdir.CA_BUNDLE),
    }


def executor_file(name: str) -> bool:
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
    if nodepython.SHIPPED in resources:  # the venv's interpreter too: a venv made over both
        python = nodepython.SHIPPED_PYTHON
    env = {
        # The AM starts a JVM (JPype) for AMRMClient/NMClient on the cluster's own classpath.
        "CLASSPATH": "<CPS>".join(conf.app_classpath),
        ExecutorEnv.var("job_id"): app_id,
        ExecutorEnv.var("staging_dir"): f"{conf.default_fs.rstrip('/')}{staging_dir}",
        ExecutorEnv.var("python"): python,
        # Passed on to the executors: tony_jupyter.data reads hdfs:// and checkpoints sync here.
        ExecutorEnv.var("webhdfs_url"): conf.webhdfs.url,
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
    cmd = nodepython.launch(
        python,
        _wanted_version(spec),
        f"{shlex.quote(python)} -m tony_jupyter.am {{{{PWD}}}} --provider yarn "
        "--host 0.0.0.0 --advertise {{NM_HOST}} 1><LOG_DIR>/am.stdout 2>><LOG_DIR>/am.stderr",
        "<LOG_DIR>/am.stderr",
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


def cleanup(rm, staging, app_id, submitted, record_dir) -> None:
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


def _wanted_version(spec: JobSpec) -> str | None:
    """The Python version the job's containers must run: the packed venv's, or this kernel's;
    with --python, whatever that interpreter is (only the nodes can tell)."""
    if spec.pack_env:
        return venvdir.venv_version(Path(spec.pack_env))
    return None if spec.python else nodepython.this_version()
