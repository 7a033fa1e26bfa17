"""The YARN backend, client side, as a pipeline of four steps, each a function with a typed input
and output: :func:`connect` (logged in, the job checked against the cluster, its delegation
tokens) -> :class:`Connected`; :func:`stage` (the packed venv and its interpreter on HDFS) ->
:class:`Staged`; :func:`launch` (the application made, its files uploaded, the record written,
submitted) -> :class:`Launched`; :func:`wait` (until the AM serves) -> the job's record. HTTP
only: the notebook host needs no JVM and no Hadoop install.

Nothing exists on the cluster before :func:`launch`; anything that goes wrong from its first
write on (Ctrl-C included) kills the application and deletes the staging and record
directories (:class:`Undo`), so a failed submission leaves nothing behind. With
``TONY_JUPYTER_WARM_YARN`` set, a job of the last one's shape goes to the kernel's warm AM
instead of :func:`launch` and :func:`wait` (warmkeeper.py).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace

from ...core import jobdir, shards, venvdir
from ...core.bundle import Bundle
from ...core.errors import SpecError
from ...core.protocol import new_token
from ...core.spec import JobSpec
from ...core.yarninfo import YarnInfo
from ..client import JobRecord
from . import interpreter, packenv, secure, shipchoice, waiting
from . import warmkeeper as warm
from .amstart import wait_for_am
from .appmaster import PRIVATE_FILES, am_context, bundle_files, cleanup, executor_file

_said: set[str] = set()  # why an interpreter stays home, said once per kernel


@dataclass(frozen=True)
class Connected:
    """:func:`connect`'s output: the cluster as this user reaches it, the job's spec with what
    the cluster decides (packenv.by_default), and on a secure cluster the job's tokens."""

    cluster: secure.Cluster
    spec: JobSpec
    tokens: secure.JobTokens | None


@dataclass(frozen=True)
class Staged:
    """:func:`stage`'s output: the ARCHIVE entries every container localizes (the packed venv,
    its interpreter inside ``env_info``, the shipped directory) and how each was staged."""

    env_entry: dict | None = None
    env_info: dict | None = None
    src_entry: dict | None = None
    src_info: dict | None = None

    @property
    def python_entry(self) -> dict | None:
        """The venv's interpreter's ARCHIVE entry, where it goes with the job (interpreter.py)."""
        return (self.env_info or {}).get("interpreter")

    @property
    def ships_python(self) -> bool:
        return self.python_entry is not None

    def every_container(self) -> dict[str, dict]:
        """The entries the AM's container and every executor's localize alike: the packed venv
        and, where it goes too, its interpreter."""
        entries = {}
        if self.env_entry is not None:
            entries[packenv.ENV_NAME] = self.env_entry
        if self.python_entry is not None:
            entries[interpreter.NAME] = self.python_entry
        return entries


@dataclass(frozen=True)
class Launched:
    """:func:`launch`'s output: the application the RM accepted, its token and the record this
    host keeps of it, its yarn.json as written so far."""

    app_id: str
    token: str
    record: JobRecord
    info: YarnInfo


@dataclass
class Undo:
    """What :func:`launch` has made so far on the cluster and on this host, undone when the
    submission does not come through: the application killed (once it may exist), its staging
    and its record deleted."""

    cluster: secure.Cluster
    app_id: str | None = None
    submitted: bool = False
    record: JobRecord | None = None

    def __call__(self) -> None:
        record_dir = self.record.dir if self.record else None
        cleanup(self.cluster.rm, self.cluster.staging, self.app_id, self.submitted, record_dir)


def submit(spec: JobSpec, bundle: Bundle, argv: list[str] | None = None) -> JobRecord:
    """The pipeline: connect, stage, then the warm AM's hand-over, or launch and wait."""
    connected = connect(spec)
    staged = stage(connected)
    # the kernel's warm AM, if on (its spares run the venv as packed, without an interpreter)
    record = None
    if not staged.ships_python:
        record = warm.take(connected.cluster, connected.spec, bundle, argv, staged.env_entry)
    if record is None:
        # Only the usual way localizes the shipped directory from HDFS (a hand-over carries it).
        staged = stage_src(connected, staged, bundle)
        undo = Undo(connected.cluster)
        try:
            record = wait(connected, launch(connected, staged, bundle, argv, undo))
        except BaseException:  # KeyboardInterrupt included: leave no app, no staging, no record
            undo()
            raise
    if not staged.ships_python:
        warm.replenish(connected.cluster, connected.spec, bundle, staged.env_entry)
    return record


def connect(spec: JobSpec) -> Connected:
    """Step 1: the cluster, logged in on a secure one; the job checked against it (queue,
    labels, sizes, staging) before anything exists; its delegation tokens (one that cannot be
    had leaves nothing)."""
    cluster = secure.connect(spec)  # on a secure cluster: logged in, or a clear error
    rm, staging = cluster.rm, cluster.staging
    rm.check(spec)  # queue, labels, sizes: before anything exists
    staging.check()
    busy = waiting.notice(rm, spec)  # it fits, but not now: said, and submitted anyway
    if busy:
        print(f"tony-jupyter: {busy}", file=sys.stderr, flush=True)
    tokens = secure.job_tokens(cluster, spec) if cluster.secure else None
    spec = packenv.by_default(spec, [str(n.get("nodeHostName")) for n in rm.nodes()])
    return Connected(cluster, spec, tokens)


def stage(connected: Connected) -> Staged:
    """Step 2: the packed venv (and, where it goes too, its interpreter) on HDFS, uploaded once
    per content. Before the application exists: packing a large venv takes a while, and a
    failure here leaves nothing to clean up (the cache only ever holds complete archives)."""
    spec, staging = connected.spec, connected.cluster.staging
    if not spec.pack_env:
        if spec.ship_python == "always":
            raise SpecError(
                "--ship-python always ships the interpreter of a packed venv, and this job packs "
                "none: add --pack-env (nothing was submitted)"
            )
        return Staged()
    venv = venvdir.venv_root(spec.pack_env)
    # Refused before anything is packed: an interpreter --ship-python always cannot ship.
    key = shipchoice.cluster_key(connected.cluster.conf)
    choice = shipchoice.decide(spec.ship_python, venv, key)
    env_entry, env_info = staging.env_archive(venv)
    py = _interpreter(staging, choice)
    if py is not None:  # the entry; and how it was staged: {hash, bytes_uploaded, ...}
        env_info = {**(env_info or {}), "interpreter": py[0], "interpreter_staged": py[1]}
    return Staged(env_entry, env_info)


def stage_src(connected: Connected, staged: Staged, bundle: Bundle) -> Staged:
    """Step 2, the rest: the directory the job ships (--src-dir), an archive on HDFS."""
    if bundle.src is None:
        return staged
    src_entry, src_info = connected.cluster.staging.src_archive(bundle.src)
    return replace(staged, src_entry=src_entry, src_info=src_info)


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


def launch(
    connected: Connected, staged: Staged, bundle: Bundle, argv: list[str] | None, undo: Undo
) -> Launched:
    """Step 3: a new application, its files in staging (the AM's and the executors'), this
    host's record of it, and the application submitted. What it makes goes into ``undo`` as it
    is made."""
    cluster, spec = connected.cluster, connected.spec
    rm, staging = cluster.rm, cluster.staging
    started = time.time()
    app_id = undo.app_id = rm.new_application()
    token = new_token()
    resources = staging.upload(app_id, bundle_files(spec, bundle, argv, token), PRIVATE_FILES)
    resources[jobdir.RESOURCES] = staging.upload_json(
        app_id, jobdir.RESOURCES, _executor_resources(resources, staged)
    )
    # The AM's container holds the token's verifier, not the token (other containers of the
    # NodeManager's user can read a container's files); no shard: the AM reads none.
    am_resources = {
        k: v
        for k, v in resources.items()
        if not k.startswith(shards.SHARDS_DIR) and k != jobdir.TOKEN
    }
    am_resources.update(staged.every_container())
    record = undo.record = JobRecord.create(app_id, token, token_in_dir=True)
    # pack_env's bytes_uploaded: 0 when the hash was cached
    info = cluster.job_info(
        app_id, submitted=started, pack_env=staged.env_info, src=staged.src_info
    )
    info.write(record.layout.yarn_info)
    record.write_spec(spec)
    undo.submitted = True  # from here a half-done submit may have created the app: kill it
    creds = connected.tokens.tokens if connected.tokens else None
    rm.submit(am_context(cluster.conf, spec, app_id, staging.job_dir(app_id), am_resources, creds))
    return Launched(app_id, token, record, info)


def _executor_resources(uploaded: dict, staged: Staged) -> dict:
    """What every executor's container localizes: the bundle's files for executors, the packed
    venv and its interpreter, the shipped directory (not the AM's: it runs no user code)."""
    resources = {k: v for k, v in uploaded.items() if executor_file(k)}
    resources.update(staged.every_container())
    if staged.src_entry is not None:
        resources[jobdir.SRC] = staged.src_entry  # executor/cell.py unpacks it
    return resources


def wait(connected: Connected, launched: Launched) -> JobRecord:
    """Step 4: until the AM serves (the queue's wait said as it goes: waiting.py); its URL in
    the record; on a secure cluster, the job's tokens kept fresh past their lifetime."""
    rm, spec, app_id = connected.cluster.rm, connected.spec, launched.app_id
    accepted = waiting.AcceptedLines(rm, spec, app_id)
    url = wait_for_am(rm, app_id, launched.token, spec.localization_timeout_s, accepted)
    info = launched.info.am_started(url)
    info.write(launched.record.layout.yarn_info)
    if connected.tokens:  # new tokens before these reach their maximum lifetime
        due = connected.tokens.refresh_time()
        secure.TokenKeeper.get().watch(app_id, launched.record.dir, spec, info, due)
    return launched.record
