"""YarnProvider: one YARN container per task, through Hadoop's own AMRMClient and NMClient
(called from Python through JPype, in the AM's container).

The synchronous clients are driven from one Python thread (allocate every 100 ms while asks or
stops are outstanding, every second otherwise, and at once when a container is asked for), so no
Java callback interfaces are needed;
container starts and stops go through a small thread pool because each is a blocking NM RPC.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ...core import jobdir, nodepython, shards
from ...core.bundle import BundleInfo
from ...core.protocol import CHECKPOINT_FENCE, ExecutorEnv
from ...core.spec import JobSpec, TaskSpec
from ...core.tokens import tokens_env
from .. import timeline
from ..provider import Placement, Provider
from . import classarchive, eventlog, jvm
from . import historyhdfs as history
from .credentials import Credentials
from .exits import EXIT_WORDS, FINAL
from .localizing import LocalizationWatch

log = logging.getLogger("tony_jupyter.am.yarn")
V = ExecutorEnv.var

GPU = "yarn.io/gpu"
ERR = "<LOG_DIR>/stderr"  # an executor container's stderr: the Python check's words first
LOGS = f"1><LOG_DIR>/stdout 2>>{ERR}"
FAST_S, SLOW_S = 0.1, 1.0
SHUTDOWN_WAIT_S = 15.0
# How long one call to a NodeManager may keep retrying one that does not answer (Hadoop's
# default: 3 minutes). A node cut off from the AM holds a stop that long; the node's loss is
# the RM's to declare, and its containers' completions come from the RM.
NM_WAIT_MS = 30_000
NM_WAIT_KEY = "yarn.client.nodemanager-connect.max-wait-ms"


@dataclass
class Launch:
    task: TaskSpec
    task_id: str
    attempt: int
    env: dict[str, str]
    request: object = None
    container: Any = None  # a YARN Container (Java)
    cid: str = ""  # its id, as a string (no JVM call each time it is looked up)
    gpus: list[int] = field(default_factory=list)
    stopping: bool = False
    spare: bool = False  # a warm pool's container, waiting for a task (warmapp.py)


class YarnProvider(Provider):
    def __init__(self, job_dir: Path, python: str | None = None):
        self.job_dir = job_dir
        self.python = python or os.environ.get(V("python")) or sys.executable
        self.staging = os.environ.get(V("staging_dir"), "")
        spec = JobSpec.from_json(jobdir.JobDir(job_dir).spec.read_text())
        self.keep_staging = spec.keep_staging
        # Elastic jobs: each replaced worker's attempt is its own, and a round has one writer.
        self.fence_checkpoints = bool(self.staging) and not spec.min_workers
        self.fenced = 1  # the newest attempt this AM claimed the checkpoints for
        self.outcome = ("FAILED", "the AM ended without an outcome")
        self.resources = json.loads(jobdir.JobDir(job_dir).resources.read_text())
        self.shards = BundleInfo.read(jobdir.JobDir(job_dir).bundle).shards
        self.cds = jvm.start(spec.am_memory_mb)
        timeline.mark("JVM started")
        if self.cds is not None:
            timeline.note(f"class archive: {self.cds.state}")
        self.cds_building = False
        self.J: Any = jvm.Classes()  # Java classes: typed by the JVM, not here
        timeline.mark("Hadoop classes loaded")
        self.conf = self.J.YarnConfiguration()
        # Secure cluster: the job's delegation tokens, for the executors (credentials.py).
        self.creds = (
            Credentials(self.J) if self.J.UserGroupInformation.isSecurityEnabled() else None
        )
        self.am_attempt = eventlog.am_attempt()
        self.events = None
        if self.staging:
            self.events = eventlog.EventLog(
                lambda: self.J.Path(self.staging).getFileSystem(self.conf),
                self.J,
                self.staging,
                self.am_attempt,
            )
        self.amrm = self.J.AMRMClient.createAMRMClient()
        self.amrm.init(self.conf)
        self.amrm.start()
        self.nm = self.J.NMClient.createNMClient()
        nm_conf = self.J.YarnConfiguration(self.conf)
        nm_conf.setLong(NM_WAIT_KEY, min(int(nm_conf.getLong(NM_WAIT_KEY, NM_WAIT_MS)), NM_WAIT_MS))
        self.nm.init(nm_conf)
        self.nm.start()
        timeline.mark("AMRM and NM clients started")
        self.localization = LocalizationWatch(self.nm)
        self.lock = threading.RLock()
        self.pending: dict[int, Launch] = {}  # allocationRequestId -> launch
        self.running: dict[str, Launch] = {}  # container id -> launch
        self.by_task: dict[tuple[str, int], Launch] = {}
        self.priorities: dict[str, int] = {}
        self.gpus_used: dict[str, set[int]] = {}
        self.ids = itertools.count(1)
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="nm")
        # Stops on threads of their own: stops to a node cut off wait (NM_WAIT_MS) without
        # holding back the starts of the next attempt's containers.
        self.stoppers = ThreadPoolExecutor(4, thread_name_prefix="nm-stop")
        self.stop_loop = threading.Event()
        # Set by each ask: the allocate thread sends it now, not after its idle second (a job's
        # first asks came up to 1 s late: issue 43).
        self.nudge = threading.Event()
        self.loop = threading.Thread(target=self._run, name="amrm", daemon=True)
        self.allocated_at: dict[str, float] = {}
        self.tracking_url: str | None = None  # a new tracking URL for the next allocate
        self.spares: Any = None  # a warm AM's spare containers (sparepool.WarmPool)
        self.registered = False

    # --- lifecycle ------------------------------------------------------------------------

    def start(self, am_url: str) -> None:
        if self.registered:
            return  # a warm AM registered before its job came (warmapp.py)
        self.registered = True
        u = urlparse(am_url)
        # The HTTP port goes in as the "RPC port": the app report's amRPCAddress is then the
        # address the notebook finds the AM at (also after a kernel restart).
        resp = self.amrm.registerApplicationMaster(u.hostname, u.port, am_url)
        self.max_capability = resp.getMaximumResourceCapability()
        log.info("registered with the RM; tracking URL %s", am_url)
        timeline.mark("registered with the RM")
        self.loop.start()

    def record_event(self, event: dict) -> None:
        if self.events is not None:
            self.events.append(event)

    def credentials(self) -> dict | None:
        return self.creds.snapshot() if self.creds is not None else None

    def update_credentials(self, tokens: dict[str, str]) -> int:
        if self.creds is None:
            raise NotImplementedError("this cluster does not use Kerberos: no tokens to renew")
        return self.creds.update(tokens)

    def recovered_events(self) -> list[dict]:
        return self.events.previous() if self.events is not None else []

    def unallocated(self, attempt: int) -> list[str]:
        with self.lock:
            return sorted(x.task_id for x in self.pending.values() if x.attempt == attempt)

    def localizing(self, attempt: int) -> dict[str, float]:
        with self.lock:
            cids = {t: x.cid for (t, a), x in self.by_task.items() if a == attempt and x.cid}
        since = {t: self.localization.localizing_since(cid) for t, cid in cids.items()}
        return {t: at for t, at in since.items() if at is not None}

    def running_since(self, task_id: str, attempt: int) -> float | None:
        with self.lock:
            launch = self.by_task.get((task_id, attempt))
        return self.localization.running_at(launch.cid) if launch and launch.cid else None

    def set_outcome(self, state: str, reason: str) -> None:
        self.outcome = (state, reason)

    def endpoint_registered(self, name: str, url: str, path_key: str | None = None) -> None:
        if name == "tensorboard":
            # TonY's one-click TensorBoard: the application's tracking URL (the RM's
            # /proxy/<app>/) leads to TensorBoard. Sent by the allocate thread (_run). Its guard
            # admits requests under /<path_key>/ only, and on a secure cluster only those the
            # RM's proxy marks as the owner's (its proxy-user cookie); path_key is secret: the
            # RM shows a tracking URL to those with the application's view ACL only.
            self.tracking_url = url + path_key + "/" if path_key else url

    # --- Provider contract ----------------------------------------------------------------

    def launch(self, task: TaskSpec, task_id: str, attempt: int, env: dict[str, str]) -> None:
        self.claim_checkpoints(attempt)
        if self.spares is not None and self.spares.take(task, task_id, attempt, env):
            return  # handed to a spare container's waiting executor
        self.request(Launch(task, task_id, attempt, env))

    def claim_checkpoints(self, attempt: int) -> None:
        """Attempt ``attempt`` (2 on) owns the job's HDFS checkpoints from its launch, not only
        from its chief's claim: a chief of an older attempt on a host cut off from the AM, back
        before the new chief claims them, stops writing at its next round (its fence check,
        executor/checkpoints.py), instead of writing checkpoints the new attempt would restore.
        In the background; a failed write is logged, and the new chief claims them anyway."""
        with self.lock:
            if not self.fence_checkpoints or attempt <= self.fenced:
                return
            self.fenced = attempt
        self.pool.submit(self._write_fence, attempt)

    def _write_fence(self, attempt: int) -> None:
        try:
            path = self.J.Path(f"{self.staging}/{jobdir.CHECKPOINTS}/{CHECKPOINT_FENCE}")
            out = path.getFileSystem(self.conf).create(path, True)
            try:
                out.writeBytes("#" * attempt)
            finally:
                out.close()
            log.info("attempt %d claimed the job's checkpoints (%s)", attempt, path)
        except Exception as e:  # noqa: BLE001 - a JVM exception: logged, never fatal
            log.warning("could not claim the checkpoints for attempt %d: %s", attempt, e)

    def placement(self, task_id: str, attempt: int) -> Placement | None:
        """The node YARN put the task's container on (its NodeId's host), never the task's say."""
        with self.lock:
            c = getattr(self.by_task.get((task_id, attempt)), "container", None)
        return None if c is None else Placement(str(c.getNodeId().getHost()), str(c.getId()))

    def exclude_hosts(self, add: list[str], remove: list[str]) -> None:
        J = self.J
        with self.lock:  # goes with the next allocate
            additions, removals = J.ArrayList(), J.ArrayList()
            for host in add:
                additions.add(host)
            for host in remove:
                removals.add(host)
            self.amrm.updateBlacklist(additions, removals)
        log.info("hosts excluded from placement: +%s -%s", add, remove)

    def request(self, launch: Launch) -> None:
        J, task = self.J, launch.task
        res = J.Resource.newInstance(int(task.memory_mb), int(task.vcores))
        if task.gpus:
            res.setResourceValue(GPU, int(task.gpus))
        prio = self.priorities.setdefault(task.type, len(self.priorities) + 1)
        rid = next(self.ids)
        builder = (
            J.ContainerRequest.newBuilder()
            .capability(res)
            .priority(J.Priority.newInstance(prio))
            .allocationRequestId(rid)
            .relaxLocality(True)
        )
        if task.node_label is not None:
            # "" asks for the default partition (unlabelled nodes); None leaves the queue's
            # default-node-label-expression in charge.
            builder = builder.nodeLabelsExpression(task.node_label)
        launch.request = req = builder.build()
        with self.lock:
            self.pending[rid] = launch
            if not launch.spare:
                self.by_task[(launch.task_id, launch.attempt)] = launch
            self.amrm.addContainerRequest(req)
        self.nudge.set()

    def stop_task(self, task_id: str, attempt: int) -> None:
        with self.lock:
            launch = self.by_task.get((task_id, attempt))
            if launch is None or launch.stopping:
                return
            launch.stopping = True
            if launch.container is None:
                self._forget_request(launch)
                self.on_exit(task_id, attempt, 143, "stopped before YARN gave it a container")
                return
            container = launch.container
        self.stoppers.submit(self._stop_container, container)

    def poll(self) -> None:  # completions arrive on the allocate thread
        pass

    def drain(self) -> None:
        with self.lock:
            for launch in list(self.by_task.values()):
                self.stop_task(launch.task_id, launch.attempt)
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        while self.running and time.monotonic() < deadline:
            time.sleep(0.05)

    def keep_history(self, job_dir: Path) -> None:
        if self.staging:
            fs = self.J.Path(self.staging).getFileSystem(self.conf)
            app_id = os.environ.get(V("job_id")) or job_dir.name
            history.keep(fs, self.J, self.staging, app_id, job_dir)

    def shutdown(self) -> None:
        self.drain()
        self._wrap_up_staging()
        state, reason = self.outcome
        try:
            status = self.J.FinalApplicationStatus.valueOf(FINAL.get(state, "FAILED"))
            self.amrm.unregisterApplicationMaster(status, reason[:4000], None)
            log.info("unregistered: %s (%s)", state, reason)
        except Exception as e:  # noqa: BLE001 - e.g. the app was killed through the RM already
            log.warning("could not unregister: %s", e)
        if self.cds is not None and self.cds.archive and self.cds.state == "recording":
            if not self.cds_building:
                classarchive.abandon(self.cds.archive)
        self.stop_loop.set()
        self.nudge.set()
        self.localization.stop()
        if self.loop.is_alive():
            self.loop.join(5)
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.stoppers.shutdown(wait=False, cancel_futures=True)
        for client in (self.nm, self.amrm):
            try:
                client.stop()
            except Exception as e:  # noqa: BLE001
                log.warning("stopping %s: %s", client, e)

    # --- the allocate thread --------------------------------------------------------------

    def _run(self) -> None:
        failures, first = 0, True
        while not self.stop_loop.is_set():
            busy = bool(self.pending) or any(x.stopping for x in self.running.values())
            self.nudge.clear()  # an ask from now on wakes the wait below
            try:
                with self.lock:
                    if self.tracking_url:
                        url, self.tracking_url = self.tracking_url, None
                        self.amrm.updateTrackingUrl(url)  # goes with this allocate
                        log.info("tracking URL now %s", url)
                    resp = self.amrm.allocate(0.5)
                failures = 0
                if first:
                    first = False
                    timeline.mark("first allocate")
            except Exception as e:  # noqa: BLE001 - RM restarts and hiccups are retried
                failures += 1
                log.warning("allocate failed (%d): %s", failures, e)
                if failures >= 30:
                    self._lose_all(f"the AM lost contact with the ResourceManager: {e}")
                    return
                self.stop_loop.wait(SLOW_S)
                continue
            for c in resp.getAllocatedContainers():
                self._allocated(c)
            for s in resp.getCompletedContainersStatuses():
                self._completed(s)
            self.nudge.wait(FAST_S if busy else SLOW_S)

    def _allocated(self, c) -> None:
        rid = int(c.getAllocationRequestId())
        with self.lock:
            launch = self.pending.pop(rid, None)
            if launch is None or launch.stopping:
                self.amrm.releaseAssignedContainer(c.getId())  # a stale or surplus container
                return
            self.amrm.removeContainerRequest(launch.request)
            launch.container = c
            launch.cid = cid = str(c.getId().toString())
            self.running[cid] = launch
            node = str(c.getNodeId().toString())
            if launch.task.gpus:
                used = self.gpus_used.setdefault(node, set())
                free = (i for i in itertools.count() if i not in used)
                launch.gpus = [next(free) for _ in range(launch.task.gpus)]
                used.update(launch.gpus)
        self.allocated_at[cid] = time.time()
        self.pool.submit(self._start_container, launch)

    def _start_container(self, launch: Launch) -> None:
        c, cid = launch.container, launch.cid
        try:
            self.localization.started(cid, c, launch.task_id)
            self.nm.startContainer(c, self._context(launch, c))
            log.info("started %s in %s on %s", launch.task_id, c.getId(), c.getNodeId())
            self._build_class_archive()
        except Exception as e:  # noqa: BLE001 - reported as the task's failure
            self.localization.forget(cid)
            with self.lock:
                self.running.pop(cid, None)
                self._free_gpus(launch)
                self.amrm.releaseAssignedContainer(c.getId())
            self.on_exit(
                launch.task_id,
                launch.attempt,
                1,
                f"could not start its container on {c.getNodeId()}: {e}",
            )

    def task_env(self, launch: Launch, c) -> dict[str, str]:
        """The task's environment in container ``c`` (with NodeManager's ``{{PWD}}``)."""
        env = dict(launch.env)
        env[V("bundle_dir")] = "{{PWD}}"
        env[V("executor_host")] = str(c.getNodeId().getHost())
        env[V("container_id")] = str(c.getId().toString())
        if self.staging:
            # checkpoint_dir() is container-local, mirrored here (executor/checkpoints.py).
            env[V("checkpoint_remote")] = urlparse(self.staging).path + "/" + jobdir.CHECKPOINTS
        for name in ("HADOOP_USER_NAME", V("webhdfs_url"), V("secure"), "KRB5_CONFIG"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        if self.creds is not None:
            env.update(tokens_env(self.creds.snapshot(), "{{PWD}}"))
        if launch.gpus:
            # No GPU plugin (counting-only GPUs): YARN names no device, so the AM assigns
            # per-node slots itself.
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, launch.gpus))
        return env

    def _context(self, launch: Launch, c):
        J = self.J
        cid = str(c.getId().toString())
        env = self.spares.spare_env(launch, cid) if launch.spare else self.task_env(launch, c)
        tokens = self.creds.container_tokens() if self.creds is not None else None
        jenv = J.HashMap()
        for k, v in env.items():
            jenv.put(k, v)
        resources = J.HashMap()
        mine = set(shards.parts_for(self.shards, launch.task_id))
        for name, r in self.resources.items():
            if name.startswith(shards.SHARDS_DIR + "/") and name not in mine:
                continue  # a container only gets the parts its task reads
            resources.put(
                name,
                J.LocalResource.newInstance(
                    J.URL.fromURI(J.URI(r["resource"])),
                    J.LocalResourceType.valueOf(r["type"]),
                    J.LocalResourceVisibility.valueOf(r["visibility"]),
                    int(r["size"]),
                    int(r["timestamp"]),
                ),
            )
        spare = f"--spare-yarn {self.spares.framework} " if launch.spare else ""
        run = f"{shlex.quote(self.python)} -m tony_jupyter.executor {spare}"
        cmds = J.ArrayList()  # this AM runs the job's Python: the version the tasks need
        cmds.add(nodepython.launch(self.python, nodepython.this_version(), run + LOGS, ERR))
        return J.ContainerLaunchContext.newInstance(resources, jenv, cmds, None, tokens, None)

    def _completed(self, s) -> None:
        cid = str(s.getContainerId().toString())
        self.localization.forget(cid)
        with self.lock:
            launch = self.running.pop(cid, None)
            if launch is None:
                return
            self._free_gpus(launch)
            if launch.spare:
                self.spares.lost(cid)  # a spare that was never handed a task
                return
            self.by_task.pop((launch.task_id, launch.attempt), None)
        code = int(s.getExitStatus())
        why = EXIT_WORDS.get(code, "")
        diag = str(s.getDiagnostics() or "").strip()
        if code != 0 and diag and code not in (-105,):
            why = f"{why}; {diag[-800:]}" if why else diag[-800:]
        self.on_exit(launch.task_id, launch.attempt, code, why)

    # --- helpers --------------------------------------------------------------------------

    def _build_class_archive(self) -> None:
        """Once a container has started (the classes of a job's start are in the list), the
        node's class archive is built in the background, if this AM recorded for it."""
        with self.lock:
            if self.cds_building or self.cds is None or self.cds.state != "recording":
                return
            self.cds_building = True
        try:
            assert self.cds.archive is not None
            classarchive.start_build(self.cds.archive)
        except OSError as e:  # never the job's concern: the next AM tries again
            log.warning("could not start the class archive's builder: %s", e)

    def _stop_container(self, c) -> None:
        try:
            self.nm.stopContainer(c.getId(), c.getNodeId())
        except Exception as e:  # noqa: BLE001 - already gone: its completion still arrives
            log.info("stopContainer %s: %s", c.getId(), e)

    def _forget_request(self, launch: Launch) -> None:
        for rid, x in list(self.pending.items()):
            if x is launch:
                del self.pending[rid]
                self.amrm.removeContainerRequest(launch.request)
        self.by_task.pop((launch.task_id, launch.attempt), None)

    def _free_gpus(self, launch: Launch) -> None:
        if launch.gpus and launch.container is not None:
            node = str(launch.container.getNodeId().toString())
            self.gpus_used.get(node, set()).difference_update(launch.gpus)

    def _lose_all(self, why: str) -> None:
        with self.lock:
            launches = list(self.by_task.values())
            self.running.clear()
            self.pending.clear()
            self.by_task.clear()
        for launch in launches:
            self.on_exit(launch.task_id, launch.attempt, 1, why)

    def _wrap_up_staging(self) -> None:
        if self.events is not None:
            self.events.close()
        if self.staging:
            history.wrap_up(self.J, self.conf, self.staging, self.job_dir, self.keep_staging)
