"""Why a YARN job waits, in the ResourceManager's figures: its queue's use, room and limits in
the partition its containers wait in, the applications ahead, the RM's diagnostics (a
QueueWait); and the one line said before submitting when the queue cannot place a job now."""

from __future__ import annotations

import sys
import time

from ...core.errors import BackendError
from ...core.protocol import Amount, QueueWait
from ...core.spec import JobSpec
from ...core.waits import amount, wait_text
from .rm import GPU, RMClient, am_placed, as_list, resource_of


def amount_of(info: dict | None) -> Amount:
    """An Amount from one of the RM's REST resource objects (``{"memory", "vCores", ...}``)."""
    r = resource_of(info or {})
    return Amount(r["memory"], r["vCores"], r.get(GPU, 0))


def _less(a: Amount, b: Amount) -> Amount:
    return Amount(
        max(0, a.memory_mb - b.memory_mb), max(0, a.vcores - b.vcores), max(0, a.gpus - b.gpus)
    )


def _plus(a: Amount, b: Amount) -> Amount:
    return Amount(a.memory_mb + b.memory_mb, a.vcores + b.vcores, a.gpus + b.gpus)


def _fits(ask: Amount, room: Amount) -> bool:
    return ask.memory_mb <= room.memory_mb and ask.vcores <= room.vcores and ask.gpus <= room.gpus


def _by_partition(entries, partition: str) -> dict:
    return next((e for e in as_list(entries) if e.get("partitionName", "") == partition), {})


def queue_wait(
    rm: RMClient,
    queue: str,
    since: float,
    waiting_for: tuple[str, ...],
    asked: Amount,
    partition: str | None = None,
    app_id: str | None = None,
    diagnostics: str = "",
) -> QueueWait | None:
    """The queue's figures as the RM reports them now; None when the RM does not know the queue.
    ``partition`` None: the queue's default node label."""
    q = rm.leaf_queues().get(queue)
    if q is None:
        return None
    if partition is None:
        partition = q.get("defaultNodeLabelExpression") or ""
    usage = _by_partition((q.get("resources") or {}).get("resourceUsagesByPartition"), partition)
    caps = _by_partition((q.get("capacities") or {}).get("queueCapacitiesByPartition"), partition)
    used = amount_of(usage.get("used"))
    maximum = amount_of(caps.get("effectiveMaxResource"))
    user = next(
        (u for u in as_list((q.get("users") or {}).get("user")) if u.get("username") == rm.user),
        None,
    )
    user_used = amount_of((user or {}).get("resourcesUsed"))
    user_limit = amount_of(user.get("userResourceLimit")) if user else None
    return QueueWait(
        queue=queue,
        since=since,
        waiting_for=waiting_for,
        asked=asked,
        partition=partition,
        used=used,
        maximum=maximum,
        available=_less(maximum, used),
        user_used=user_used,
        user_limit=user_limit,
        am_used=amount_of(usage.get("amUsed")),
        am_limit=amount_of(usage.get("amLimit")),
        apps_ahead=_ahead(rm, queue, app_id),
        apps_pending=int(q.get("numPendingApplications") or 0),
        diagnostics=" ".join(diagnostics.split())[:500],
    )


def _ahead(rm: RMClient, queue: str, app_id: str | None) -> int:
    """The queue's applications accepted or running, submitted before ``app_id`` (all of them
    when the job is not submitted yet). Application ids of one RM sort by submission."""
    apps = rm.queue_apps(queue, ("ACCEPTED", "RUNNING"))
    return sum(1 for a in apps if app_id is None or _order(a.get("id", "")) < _order(app_id))


def _order(app_id: str) -> tuple[int, int]:
    parts = app_id.split("_")
    try:
        return int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return (0, 0)


def task_ask(spec: dict, task_ids: list[str]) -> tuple[Amount, str | None]:
    """What ``task_ids`` ask together, from the job's spec.json, and the node label of the
    first (None: the queue's default)."""
    types = {t.get("type"): t for t in spec.get("tasks", ())}
    total, label = Amount(), None
    for i, tid in enumerate(task_ids):
        t = types.get(tid.split(":", 1)[0]) or {}
        got = Amount(int(t.get("memory_mb", 0)), int(t.get("vcores", 0)), int(t.get("gpus", 0)))
        total = _plus(total, got)
        if i == 0:
            label = t.get("node_label")
    return total, label


def notice(rm: RMClient, spec: JobSpec) -> str:
    """One line when the queue cannot place the whole job now (its room, its user's limit or
    its AMs' limit): the job is submitted anyway and waits in the queue; "" when it fits."""
    am = Amount(spec.am_memory_mb, spec.am_vcores, 0)
    default = None
    asks: dict[str | None, Amount] = {default: am}
    for t in spec.tasks:
        each = Amount(t.memory_mb * t.instances, t.vcores * t.instances, t.gpus * t.instances)
        asks[t.node_label] = _plus(asks.get(t.node_label, Amount()), each)
    for label, ask in asks.items():
        w = queue_wait(rm, spec.queue, 0.0, (), ask, label)
        if w is None:
            return ""
        room = w.available
        if w.user_limit is not None:
            room = Amount(
                min(room.memory_mb, max(0, w.user_limit.memory_mb - w.user_used.memory_mb)),
                min(room.vcores, max(0, w.user_limit.vcores - w.user_used.vcores)),
                min(room.gpus, max(0, w.user_limit.gpus - w.user_used.gpus)),
            )
        am_room = _less(w.am_limit, w.am_used)
        am_waits = label is None and not _fits(am, Amount(am_room.memory_mb, am_room.vcores, 0))
        if _fits(ask, room) and not am_waits:
            continue
        gpus = bool(ask.gpus or w.maximum.gpus)
        where = f"queue {spec.queue!r}" + (f" (partition {w.partition!r})" if w.partition else "")
        why = (
            f"its AMs already use {amount(w.am_used, False)} of {amount(w.am_limit, False)}"
            if am_waits
            else f"{amount(room, gpus)} free of {amount(w.maximum, gpus)}"
        )
        return (
            f"{where} cannot place this job now: it asks for {amount(ask, gpus)} there, {why}, "
            f"{w.apps_ahead} application{'s' * (w.apps_ahead != 1)} ahead; submitted anyway: "
            "it waits in the queue (the job's view says for what)"
        )
    return ""


# While an application is ACCEPTED without its AM's container, %%tony says why after this long,
# and again this often.
SAY_AFTER_S, SAY_EVERY_S = 3.0, 30.0


class AcceptedLines:
    """Said on stderr while the job's application waits for its AM's container (the job's view
    is shown once the AM serves): the queue's figures, the RM's diagnostics."""

    def __init__(self, rm: RMClient, spec: JobSpec, app_id: str) -> None:
        self.rm, self.spec, self.app_id = rm, spec, app_id
        self.first = time.monotonic()
        self.said = 0.0

    def __call__(self, app: dict) -> None:
        now = time.monotonic()
        if am_placed(app) or now - self.first < SAY_AFTER_S or now - self.said < SAY_EVERY_S:
            return
        self.said = now
        am = Amount(self.spec.am_memory_mb, self.spec.am_vcores, 0)
        since = (app.get("startedTime") or 0) / 1000 or time.time()
        try:
            w = queue_wait(
                self.rm, self.spec.queue, since, ("AM",), am, None, self.app_id,
                str(app.get("diagnostics", "")),
            )  # fmt: skip
        except BackendError:
            return
        if w is not None:
            print(f"tony-jupyter: {self.app_id} {wait_text(w, time.time())}", file=sys.stderr)
