"""The YARN backend, client side: check, stage on HDFS, submit through the RM's REST API, and
wait until the AM serves. HTTP only: the notebook host needs no JVM and no Hadoop install.

Anything that goes wrong from the first write on (including Ctrl-C) kills the application and
deletes the staging and record directories, so a failed submission leaves nothing behind.
With ``TONY_JUPYTER_WARM_YARN`` set, a job of the last one's shape goes to the kernel's warm AM
instead (warmproc.py).
"""

from __future__ import annotations

import sys
import time

from ...core import jobdir, shards, venvdir
from ...core.bundle import Bundle
from ...core.errors import SpecError
from ...core.protocol import new_token
from ...core.spec import JobSpec
from ..client import JobRecord
from . import interpreter, packenv, secure, shipchoice, waiting
from . import warmkeeper as warm
from .appmaster import (
    PRIVATE_FILES,
    am_context,
    bundle_files,
    cleanup,
    executor_file,
    wait_for_am,
)

_said: set[str] = set()  # why an interpreter stays home, said once per kernel


def submit(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    cluster = secure.connect(spec)  # on a secure cluster: logged in, or a clear error
    rm, staging = cluster.rm, cluster.staging
    rm.check(spec)  # queue, labels, sizes: before anything exists
    staging.check()
    busy = waiting.notice(rm, spec)  # it fits, but not now: said, and submitted anyway
    if busy:
        print(f"tony-jupyter: {busy}", file=sys.stderr, flush=True)
    # Delegation tokens before the application exists: one that cannot be had leaves nothing.
    tokens = secure.job_tokens(cluster, spec) if cluster.secure else None
    spec = packenv.by_default(spec, [str(n.get("nodeHostName")) for n in rm.nodes()])
    env_entry, env_info = None, None
    if spec.pack_env:
        venv = venvdir.venv_root(spec.pack_env)
        # Refused before anything is packed: an interpreter --ship-python always cannot ship.
        choice = shipchoice.decide(spec.ship_python, venv, shipchoice.cluster_key(cluster.conf))
        # Before the application exists: packing a large venv takes a while, and a failure
        # here leaves nothing to clean up (the cache only ever holds complete archives).
        env_entry, env_info = staging.env_archive(venv)
        py = _interpreter(staging, choice)
        if py is not None:  # the entry; and how it was staged: {hash, bytes_uploaded, ...}
            env_info = {**(env_info or {}), "interpreter": py[0], "interpreter_staged": py[1]}
    elif spec.ship_python == "always":
        raise SpecError(
            "--ship-python always ships the interpreter of a packed venv, and this job packs "
            "none: add --pack-env (nothing was submitted)"
        )
    # the kernel's warm AM, if on (its spares run the venv as packed, without an interpreter)
    shipped = bool(env_info and env_info.get("interpreter"))
    record = None if shipped else warm.take(cluster, spec, bundle, argv, env_entry)
    if record is None:
        # Only the usual way localizes the shipped directory from HDFS (a hand-over carries it).
        src_entry, src_info = staging.src_archive(bundle.src) if bundle.src else (None, None)
        record = _submit(
            cluster, spec, bundle, argv, tokens, (env_entry, env_info, src_entry, src_info)
        )
    if not shipped:
        warm.replenish(cluster, spec, bundle, env_entry)
    return record


def _interpreter(staging, choice: shipchoice.Choice) -> tuple[dict, dict] | None:
    """The venv's base interpreter as an ARCHIVE entry, and how it was staged, when it goes with
    the job (shipchoice.py), said with its size; else None, and why said once."""
    prefix = choice.prefix
    if prefix is None:
        if choice.why not in _said:
            _said.add(choice.why)
            print(f"tony-jupyter: the venv's Python: {choice.why}", file=sys.stderr, flush=True)
        return None
    entry, info = staging.python_archive(prefix)
    print(
        f"tony-jupyter: the venv's Python {prefix} goes with the job "
        f"({entry['size'] / (1 << 20):.0f} MB packed, uploaded once per content"
        f"{'' if info.get('bytes_uploaded') else ': already on HDFS'})",
        file=sys.stderr,
        flush=True,
    )
    return entry, info


def _submit(cluster, spec, bundle, argv, tokens, staged) -> JobRecord:
    conf, rm, staging = cluster.conf, cluster.rm, cluster.staging
    env_entry, env_info, src_entry, src_info = staged
    app_id, submitted, record_dir = None, False, None
    started = time.time()
    try:
        app_id = rm.new_application()
        token = new_token()
        files = bundle_files(spec, bundle, argv, token)
        resources = staging.upload(app_id, files, private=PRIVATE_FILES)
        executor_resources = {k: v for k, v in resources.items() if executor_file(k)}
        # The AM's container holds the token's verifier, not the token (other containers of
        # the NodeManager's user can read a container's files).
        resources = {
            k: v
            for k, v in resources.items()
            if not k.startswith(shards.SHARDS_DIR) and k != jobdir.TOKEN
        }
        if env_entry is not None:
            executor_resources[packenv.ENV_NAME] = resources[packenv.ENV_NAME] = env_entry
        if env_info and env_info.get("interpreter"):
            py = env_info["interpreter"]
            executor_resources[interpreter.NAME] = resources[interpreter.NAME] = py
        if src_entry is not None:
            # The shipped directory, an ARCHIVE each executor localizes (executor/cell.py); not
            # the AM's: it runs no user code.
            executor_resources[jobdir.SRC] = src_entry
        resources[jobdir.RESOURCES] = staging.upload_json(
            app_id, jobdir.RESOURCES, executor_resources
        )
        record = JobRecord.create(app_id, token, token_in_dir=True)
        record_dir = record.dir
        # pack_env's bytes_uploaded: 0 when the hash was cached
        yarn_info = cluster.job_info(app_id, submitted=started, pack_env=env_info, src=src_info)
        yarn_info.write(record.layout.yarn_info)
        record.write_spec(spec)
        submitted = True  # from here a half-done submit may have created the app: kill it
        creds = tokens.tokens if tokens else None
        rm.submit(am_context(conf, spec, app_id, staging.job_dir(app_id), resources, creds))
        accepted = waiting.AcceptedLines(rm, spec, app_id)
        url = wait_for_am(rm, app_id, token, spec.localization_timeout_s, accepted)
        yarn_info = yarn_info.am_started(url)
        yarn_info.write(record.layout.yarn_info)
        if tokens:  # new tokens before these reach their maximum lifetime
            due = tokens.refresh_time()
            secure.TokenKeeper.get().watch(app_id, record_dir, spec, yarn_info, due)
    except BaseException:  # KeyboardInterrupt included: leave no app, no staging, no record
        cleanup(rm, staging, app_id, submitted, record_dir)
        raise
    return record
