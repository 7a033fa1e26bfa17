"""The warm YARN AM's spare containers (warmapp.py): asked of YARN for the template's tasks,
each with its own secrets, handed to the job's tasks whose shape and start environment they
share, and the rest released."""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import secrets
from pathlib import Path

from ...core import jobdir, loadenv, safefiles
from ...core import warmproc as warm
from ...core.jobdir import JobDir
from ...core.protocol import WarmTask
from ...core.spec import JobSpec, TaskSpec
from .provider import Launch, YarnProvider

log = logging.getLogger("tony_jupyter.am.yarn")

# What a fresh executor container localizes; src.tar.gz is the shipped directory, an ARCHIVE
# "src" in a fresh container, unpacked by the spare executor itself.
EXECUTOR_FILES = (jobdir.CELL, jobdir.NAMES, jobdir.BUNDLE, jobdir.SPEC, jobdir.SRC_ARCHIVE)


def shape(task: TaskSpec) -> tuple:
    return (task.memory_mb, task.vcores, task.gpus, task.node_label)


class WarmPool:
    """The warm AM's spare containers: asked for, handed to tasks, released."""

    def __init__(self, provider: YarnProvider, verifier: str):
        self.provider = provider
        self.verifier = verifier  # the kernel's token's SHA-256
        self._launch_secrets: dict[str, str] = {}  # container id -> its one-time launch secret
        self._hello_done: set[str] = set()  # containers whose launch secret was spent
        self._sessions: dict[str, str] = {}  # container id -> the secret it polls with
        self.taken_over: set[str] = set()  # a launch secret presented twice: no task for it
        self.closed = False  # job, hello, status: once the job was handed
        self.task_closed = False  # task: once every handed task was fetched
        self.assigned: dict[str, WarmTask] = {}  # container id -> what its executor is handed
        self.fetched: set[str] = set()  # containers whose executor took what it was handed
        self.released: set[str] = set()
        self.waiting: set[str] = set()  # containers whose executor waits here now
        self.files: dict[str, str] = {}  # the job's files for its executors, base64
        self.job: asyncio.Future | None = None
        self.job_dir: Path | None = None
        self.staged = False
        self.count = 0
        # What the spare executors import while they wait ("": none; am/warmstart.py's plan), and
        # the job's cell's writes to what that import reads (loadenv.load_env_writes).
        self.framework = ""
        self.writes: list | None = []

    def ask(self, template: JobSpec, env: dict[str, str]) -> None:
        preloadable = template.procs_per_task == 1 and not template.elastic
        self.framework = template.framework if preloadable else ""
        for t in template.tasks:
            for _ in range(t.instances):
                self.count += 1
                launch = Launch(t, f"spare:{self.count}", 0, dict(env), spare=True)
                self.provider.request(launch)

    def spare_env(self, launch: Launch, cid: str) -> dict[str, str]:
        """Spare container ``cid``'s environment: its own one-time secret for this AM, and its
        GPUs' devices set before its executor imports the framework, as a task's in it will be
        (the same container, the same GPUs)."""
        if launch.gpus:
            launch.env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, launch.gpus))
        return {**launch.env, **self.launch_env(cid)}

    def _imports_alike(self, spare: Launch, env: dict[str, str]) -> bool:
        """Whether a task with ``env`` would have imported its framework as the spare did."""
        if not self.framework:
            return True
        task = dict(env)
        if spare.gpus:
            task["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spare.gpus))
        alike = loadenv.imports_as(self.framework, spare.env, task)
        return alike and loadenv.imports_alike(self.writes, spare.env)

    def launch_env(self, cid: str) -> dict[str, str]:
        """What spare container ``cid`` starts with besides the template's: its own secret."""
        secret = secrets.token_urlsafe(32)
        with self.provider.lock:
            self._launch_secrets[cid] = secret
        return {warm.SPARE_TOKEN: secret}

    def hello(self, cid: str, given: str) -> str | None:
        """Trade ``cid``'s launch secret for the secret it polls with; None: not its secret.
        A second trade marks the container taken over (another container read the secret)."""
        expected = self._launch_secrets.get(cid)
        if expected is None or not hmac.compare_digest(given.encode(), expected.encode()):
            return None
        if cid in self._hello_done:
            log.warning("spare container %s: its launch secret came twice; not used", cid)
            self.taken_over.add(cid)
            self._sessions.pop(cid, None)
            return None
        self._hello_done.add(cid)
        self._sessions[cid] = secrets.token_urlsafe(32)
        return self._sessions[cid]

    def polls_as(self, cid: str, given: str) -> bool:
        expected = self._sessions.get(cid)
        return expected is not None and hmac.compare_digest(given.encode(), expected.encode())

    def take(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> bool:
        """Hand the task to a spare container that fits; False: ask YARN as usual."""
        p = self.provider
        if not self.files:
            return False
        with p.lock:
            found = next(
                (
                    (cid, s)
                    for cid, s in p.running.items()
                    if s.spare
                    and cid not in self.assigned
                    and cid not in self.taken_over
                    and cid in self._sessions  # its executor is there, and said hello
                    and shape(s.task) == shape(task)
                    and warm.at_start(s.env) == warm.at_start(env)
                    and self._imports_alike(s, env)
                ),
                None,
            )
            if found is None:
                self._stage()  # a fresh container localizes the job's files
                return False
            cid, spare = found
            launch = Launch(task, task_id, attempt, env, container=spare.container, cid=cid)
            launch.gpus = spare.gpus
            p.running[cid] = launch
            p.by_task[(task_id, attempt)] = launch
            self.assigned[cid] = WarmTask(p.task_env(launch, spare.container), self.files)
        log.info("%s handed to spare container %s", task_id, cid)
        return True

    def lost(self, cid: str) -> None:
        log.info("spare container %s ended before it was handed a task", cid)

    def release_rest(self) -> None:
        """After the job's tasks were handed: the spares not needed go back to YARN."""
        p = self.provider
        with p.lock:
            rest = [(cid, x) for cid, x in p.running.items() if x.spare]
            asked = [x for x in p.pending.values() if x.spare]
            for x in asked:
                p._forget_request(x)
        for cid, x in rest:
            self.released.add(cid)
            p.stoppers.submit(p._stop_container, x.container)

    def adopt(self, job_dir: Path, files: dict[str, str]) -> None:
        """Write the job's files over the template's (localized files are symlinks into
        NodeManager's cache: replaced, not written through)."""
        for name in files:  # every name checked before any is written (safefiles.py)
            safefiles.inside(job_dir, name)
        for name, b64 in files.items():
            safefiles.write_file(job_dir, name, base64.b64decode(b64))
        self.files = {n: files[n] for n in EXECUTOR_FILES if n in files}
        cell = base64.b64decode(files.get(jobdir.CELL, "")).decode(errors="replace")
        self.writes = loadenv.load_env_writes(cell)
        spec = JobSpec.from_json(JobDir(job_dir).spec.read_text())
        self.provider.keep_staging = spec.keep_staging
        self.provider.shards = None
        self.job_dir = job_dir

    def _stage(self) -> None:
        """The job's files on HDFS, for a task no spare takes (a fresh container localizes them),
        once, when first needed: not before (JPype's HDFS calls hold the GIL, and the event
        loop that answers the spare executors would wait on them: ~0.8 s measured)."""
        p, J, job_dir = self.provider, self.provider.J, self.job_dir
        if self.staged or job_dir is None:
            return
        self.staged = True
        try:
            fs = J.Path(p.staging).getFileSystem(p.conf)
            for name in self.files:
                dst = J.Path(f"{p.staging}/{name}")
                fs.copyFromLocalFile(False, True, J.Path(str(job_dir / name)), dst)
                st = fs.getFileStatus(dst)
                archive = name == jobdir.SRC_ARCHIVE
                p.resources[jobdir.SRC if archive else name] = {
                    "resource": str(fs.makeQualified(dst).toUri().toString()),
                    "type": "ARCHIVE" if archive else "FILE",
                    "visibility": "APPLICATION",
                    "size": int(st.getLen()),
                    "timestamp": int(st.getModificationTime()),
                }
        except Exception as e:  # noqa: BLE001 - a fresh container then fails, and says why
            log.warning("staging the job's files: %s", e)
