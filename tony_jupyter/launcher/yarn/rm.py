"""The ResourceManager's REST API (``/ws/v1/cluster``): everything the notebook asks YARN.

Writable calls carry ``?user.name=`` (pseudo authentication; without it the RM answers
UNAUTHORIZED); on a secure cluster every call authenticates with SPNEGO instead (``auth``).
Hadoop 3.5 moved to Jersey 2, which renders one-element lists as objects in
places, so every list is read through :func:`as_list`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

from ...core.errors import BackendError, SpecError
from ...core.hadoopconf import Address
from ...core.spec import JobSpec
from .. import outcome
from . import transport

APP_TYPE = "TONY-JUPYTER"
TERMINAL_APP_STATES = ("FINISHED", "FAILED", "KILLED")
GPU = "yarn.io/gpu"


def as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def resource_of(info: dict) -> dict[str, int]:
    """{'memory': MB, 'vCores': n, 'yarn.io/gpu': n} from a REST resource object."""
    out = {"memory": int(info.get("memory", 0)), "vCores": int(info.get("vCores", 0))}
    ris = (info.get("resourceInformations") or {}).get("resourceInformation")
    for ri in as_list(ris):
        if ri.get("name") == GPU:
            out[GPU] = int(ri.get("value", 0))
    return out


GONE_NODE_STATES = ("DECOMMISSIONED", "DECOMMISSIONING", "LOST", "SHUTDOWN")


@dataclass(frozen=True)
class Node:
    """A node in service: its id, its partition ('' = default) and what it declares."""

    id: str
    partition: str
    resources: dict[str, int]


# How long a call looks for the active ResourceManager of an HA pair while a failover is under
# way (both standby, or the old active down and the new one not yet elected): bounded, not
# Hadoop's ~15 x 34 s of client retries.
FAILOVER_WAIT_S = 20.0


class RMClient:
    def __init__(self, address: Address, user: str, timeout: float = 10.0, auth=None):
        self.address, self.user, self.timeout = address, user, timeout
        self.urls = address.urls
        self.active = 0  # the index of the RM that answered last: asked first next time
        self.session = transport.session(auth)  # SPNEGO on a secure cluster
        self.session.headers["Accept"] = "application/json"

    def _request(self, method: str, path: str, ok=(200,), **kw) -> requests.Response:
        params = dict(kw.pop("params", {}) or {})
        if method != "GET" and self.session.auth is None:
            params["user.name"] = self.user
        tried: list[str] = []
        deadline = time.monotonic() + (FAILOVER_WAIT_S if len(self.urls) > 1 else 0.0)
        pause = 0.25
        slow_again = method == "GET"  # reached but slow to answer (a busy RM): a GET once more
        while True:
            r = self._try_each(method, path, params, tried, kw)
            if r is not None:
                return self._answer(r, method, path, ok)
            if slow_again and tried[-1].endswith(": ReadTimeout"):
                slow_again = False
                continue
            if time.monotonic() >= deadline:
                break
            time.sleep(pause)
            pause = min(2.0, pause * 2)
        if len(self.urls) == 1:
            raise BackendError(
                f"cannot reach the YARN ResourceManager at {self.address}: "
                f"{tried[-1].split(': ', 1)[-1]}. Is the cluster up (`tony-jupyter devcluster "
                "status`), and is HADOOP_CONF_DIR the right cluster's?"
            )
        raise BackendError(
            f"cannot reach an active YARN ResourceManager (from {self.address.source}); tried "
            f"{'; '.join(tried)}. Is a failover under way, or are these the right cluster's "
            "ResourceManagers (yarn.resourcemanager.ha.rm-ids in HADOOP_CONF_DIR)?"
        )

    def _try_each(self, method: str, path: str, params: dict, tried: list[str], kw: dict):
        """One round over the RMs, the last active first: the active one's answer, or None
        (each failure added to ``tried``)."""
        for i in [self.active, *(j for j in range(len(self.urls)) if j != self.active)]:
            url = self.urls[i]
            try:
                r = self.session.request(
                    method,
                    f"{url}/ws/v1/cluster{path}",
                    params=params,
                    timeout=self.timeout,
                    allow_redirects=False,
                    **kw,
                )
            except requests.exceptions.SSLError as e:
                raise BackendError(
                    "cannot reach the YARN ResourceManager: "
                    + transport.describe(e, url, self.session.verify)
                ) from None
            except requests.exceptions.ConnectionError as e:  # never reached the RM: next one
                tried.append(f"{url}: {transport.describe(e, url, self.session.verify)}")
                continue
            except requests.RequestException as e:
                if method != "GET":  # it may have been done: asking again could do it twice
                    raise BackendError(
                        f"the ResourceManager at {url} did not answer {method} {path} "
                        f"({type(e).__name__}); it may have been done: check with "
                        "`tony-jupyter list` before trying again"
                    ) from None
                tried.append(f"{url}: {type(e).__name__}")
                continue
            if len(self.urls) > 1 and _standby(r, path):
                tried.append(f"{url}: standby")
                continue
            self.active = i
            return r
        return None

    def _answer(self, r: requests.Response, method: str, path: str, ok) -> requests.Response:
        if r.status_code not in ok:
            if r.status_code == 403 and "/apps" in path:
                raise BackendError(
                    f"the ResourceManager refused {method} {path} for {self.user!r} (403): "
                    f"{_message(r)}. YARN's ACLs allow this to the application's owner, the "
                    "queue's administrators and yarn.admin.acl only"
                )
            raise BackendError(
                f"the ResourceManager ({self.urls[self.active]}) answered {method} {path} with "
                f"{r.status_code}: {r.text[:500]}"
            )
        return r

    # --- checks before anything is created -------------------------------------------------

    def leaf_queues(self) -> dict[str, dict]:
        info = self._request("GET", "/scheduler").json()["scheduler"]["schedulerInfo"]
        leaves: dict[str, dict] = {}

        def walk(q: dict) -> None:
            children = as_list((q.get("queues") or {}).get("queue"))
            if not children and q.get("queueName"):
                leaves[q["queueName"]] = q
                if q.get("queuePath"):
                    leaves[q["queuePath"]] = q
            for c in children:
                walk(c)

        walk(info)
        return leaves

    def info(self) -> dict:
        """The cluster's ``clusterInfo`` (state, haState, hadoopVersion)."""
        return self._request("GET", "/info").json()["clusterInfo"]

    def nodes(self, states: tuple[str, ...] = ("RUNNING",)) -> list[dict]:
        got = self._request("GET", "/nodes", params={"states": ",".join(states)}).json()
        return as_list((got.get("nodes") or {}).get("node"))

    def node_labels(self) -> set[str]:
        got = self._request("GET", "/get-node-labels").json() or {}
        infos = as_list(got.get("nodeLabelInfo") or got.get("nodeLabelsInfo"))
        return {i["name"] if isinstance(i, dict) else str(i) for i in infos}

    def check(self, spec: JobSpec) -> None:
        """Queue, node labels and sizes that YARN could never satisfy: SpecError, naming the fix.
        Checked before new-application, so a bad request leaves nothing on the cluster."""
        queues = self.leaf_queues()
        q = queues.get(spec.queue)
        if q is None:
            names = sorted(n for n in queues if "." not in n)
            raise SpecError(
                f"YARN queue {spec.queue!r} does not exist; this cluster's queues: "
                f"{', '.join(names)} (use --queue NAME or tony.yarn.queue)"
            )
        nodes = self.usable_nodes()
        gpus = max((t.gpus for t in spec.tasks), default=0)
        if gpus and not any(n.resources.get(GPU) for n in nodes):
            raise SpecError(
                f"the job asks for {gpus} GPUs per task (--gpus / tony.<type>.gpus), but no "
                f"node of this cluster offers {GPU} (none of its {len(nodes)} NodeManagers "
                f"declares it: yarn.resource-types and yarn.nodemanager.resource-type.{GPU}); "
                "YARN would never run these tasks. Drop --gpus, or use a cluster with GPU nodes"
            )
        wanted = {t.node_label for t in spec.tasks if t.node_label}
        if wanted:
            labels = self.node_labels()
            accessible = set(as_list(q.get("nodeLabels")))
            for label in sorted(wanted):
                if label not in labels:
                    raise SpecError(
                        f"node label {label!r} does not exist on this cluster (labels: "
                        f"{', '.join(sorted(labels)) or 'none'}); fix --node-label / "
                        "tony.<type>.node-label"
                    )
                if not any(n.partition == label for n in nodes):
                    carried = sorted({n.partition for n in nodes if n.partition})
                    raise SpecError(
                        f"no node carries node label {label!r}: the cluster has the label, but "
                        "none of its NodeManagers in service is in that partition now, so YARN "
                        "would never run these tasks (labels nodes carry: "
                        f"{', '.join(carried) or 'none'}); fix --node-label / "
                        "tony.<type>.node-label, or ask the cluster's administrators to "
                        f"put nodes in {label!r}"
                    )
                if label not in accessible and "*" not in accessible:
                    raise SpecError(
                        f"queue {spec.queue!r} cannot use node label {label!r} (it may use: "
                        f"{', '.join(sorted(accessible - {' '})) or 'none'}); pick a queue that "
                        "can, e.g. --queue gpu"
                    )
        limit = resource_of(q.get("maximumAllocation") or {})
        asks = [(f"{t.type} tasks", t.memory_mb, t.vcores, t.gpus) for t in spec.tasks]
        asks.append(("the AM (tony.am.memory/vcores)", spec.am_memory_mb, spec.am_vcores, 0))
        for what, mb, vcores, gpus in asks:
            for name, got, most, flag in (
                ("memory", mb, limit.get("memory"), "--memory / tony.<type>.memory"),
                ("vcores", vcores, limit.get("vCores"), "--vcores / tony.<type>.vcores"),
                ("GPUs", gpus, limit.get(GPU, 0), "--gpus / tony.<type>.gpus"),
            ):
                if most is not None and got > most and (most or name == "GPUs"):
                    unit = " MB" if name == "memory" else ""
                    raise SpecError(
                        f"{what} ask for {got}{unit} {name}, above the most a container can "
                        f"have in queue {spec.queue!r} ({most}{unit}); YARN would never run "
                        f"them. Lower {flag}" + (self._gpu_hint(queues) if gpus else "")
                    )
        self._check_nodes(spec, q, queues, nodes)
        self._check_total(spec, q)

    def usable_nodes(self) -> list[Node]:
        """The cluster's nodes in service (not decommissioned, lost or shut down): each one's
        partition and what it declares (totalResource)."""
        got = self._request("GET", "/nodes").json().get("nodes") or {}
        out = []
        for n in as_list(got.get("node")):
            if n.get("state") in GONE_NODE_STATES:
                continue
            labels = as_list(n.get("nodeLabels"))
            total = resource_of(n.get("totalResource") or {})
            out.append(Node(str(n.get("id", "")), labels[0] if labels else "", total))
        return out

    def _check_nodes(
        self, spec: JobSpec, q: dict, queues: dict[str, dict], nodes: list[Node]
    ) -> None:
        """A container larger than every node of its partition: YARN would keep it pending
        forever (the scheduler's maximum allocation can be larger than any one node)."""
        default = q.get("defaultNodeLabelExpression") or ""
        asks = [
            (f"{t.type} tasks", default if t.node_label is None else t.node_label, t)
            for t in spec.tasks
        ]
        for what, part, t in asks + [("the AM (tony.am.memory/vcores)", default, None)]:
            mb, vcores, gpus = (
                (spec.am_memory_mb, spec.am_vcores, 0)
                if t is None
                else (t.memory_mb, t.vcores, t.gpus)
            )
            where = f"partition {part!r}" if part else "the default partition (no node label)"
            there = [n for n in nodes if n.partition == part]
            if not there:
                raise SpecError(
                    f"{what} go to {where}, but no node in service is there; YARN would never "
                    "run them. Use a node label whose nodes are up (--node-label), or another "
                    "queue"
                )
            if any(
                n.resources["memory"] >= mb
                and n.resources["vCores"] >= vcores
                and n.resources.get(GPU, 0) >= gpus
                for n in there
            ):
                continue
            biggest = max(
                there,
                key=lambda n: (
                    n.resources.get(GPU, 0),
                    n.resources["memory"],
                    n.resources["vCores"],
                ),
            )
            raise SpecError(
                f"{what} ask for {mb} MB, {vcores} vcores, {gpus} GPUs each, but no node of "
                f"{where} has that much (its {len(there)} nodes; the largest, {biggest.id}: "
                f"{biggest.resources['memory']} MB, {biggest.resources['vCores']} vcores, "
                f"{biggest.resources.get(GPU, 0)} GPUs); YARN would never run them. Lower "
                "--memory / --vcores / --gpus (tony.<type>.*, tony.am.*) to fit one node"
                + (self._gpu_hint(queues, None, part) if gpus else "")
            )

    def _gpu_hint(
        self, queues: dict[str, dict], have: dict | None = None, asked: str | None = None
    ) -> str:
        """Where this cluster's GPUs are, and the flags that reach them: "; partition 'gpu' has
        2 GPUs: add --node-label gpu --queue gpu"."""
        have = self.partitions() if have is None else have
        hints = []
        for part, res in sorted(have.items()):
            if part == asked or not part or not res.get(GPU):
                continue
            able = sorted(
                {
                    q["queueName"]
                    for q in queues.values()
                    if part in as_list(q.get("nodeLabels")) or "*" in as_list(q.get("nodeLabels"))
                }
            )
            queue = f" --queue {able[0]}" if able else ""
            hints.append(f"partition {part!r} has {res[GPU]} GPUs: add --node-label {part}{queue}")
        return ("; " + "; ".join(hints)) if hints else ""

    def partitions(self) -> dict[str, dict[str, int]]:
        """The resources of the cluster's usable nodes, summed per partition ('' = default)."""
        got = self._request("GET", "/nodes").json().get("nodes") or {}
        out: dict[str, dict[str, int]] = {}
        for n in as_list(got.get("node")):
            if n.get("state") in GONE_NODE_STATES:
                continue
            labels = as_list(n.get("nodeLabels"))
            total = resource_of(n.get("totalResource") or {})
            part = out.setdefault(labels[0] if labels else "", {"memory": 0, "vCores": 0, GPU: 0})
            for k, v in total.items():
                part[k] = part.get(k, 0) + v
        return out

    def _check_total(self, spec: JobSpec, q: dict) -> None:
        """Containers that each fit but together never can (5 vcores in a 4-vcore partition)
        would wait forever for the last ones: refuse them, naming the totals."""
        default = q.get("defaultNodeLabelExpression") or ""
        asks: dict[str, list[tuple[str, int, int, int]]] = {}
        for t in spec.tasks:
            part = default if t.node_label is None else t.node_label
            asks.setdefault(part, []).append(
                (
                    f"{t.instances} {t.type}",
                    t.instances * t.memory_mb,
                    t.instances * t.vcores,
                    t.instances * t.gpus,
                )
            )
        asks.setdefault(default, []).append(("the AM", spec.am_memory_mb, spec.am_vcores, 0))
        share = {
            p.get("partitionName", ""): float(p.get("absoluteMaxCapacity", 100.0)) / 100.0
            for p in as_list((q.get("capacities") or {}).get("queueCapacitiesByPartition"))
        }
        have = self.partitions()
        for part, items in asks.items():
            room = {k: int(v * share.get(part, 1.0)) for k, v in have.get(part, {}).items()}
            where = f"partition {part!r}" if part else "the default partition"
            for i, (name, label, unit) in enumerate(
                (("memory", "memory", " MB"), ("vCores", "vcores", ""), (GPU, "GPUs", ""))
            ):
                need = sum(int(item[1 + i]) for item in items)
                most = room.get(name, 0)
                if need > most:
                    split = ", ".join(f"{item[0]}: {item[1 + i]}{unit}" for item in items)
                    raise SpecError(
                        f"the job asks for {need}{unit} {label} in all in {where} ({split}), "
                        f"but queue {spec.queue!r} can have at most {most}{unit} there; YARN "
                        "could never run all its tasks at once. Ask for fewer or smaller "
                        "tasks (--workers, --memory, --vcores, tony.am.*), or use another "
                        "queue or node label"
                        + (self._gpu_hint(self.leaf_queues(), have, part) if name == GPU else "")
                    )

    def delegation_token(self, renewer: str) -> dict:
        """An RM delegation token (``{"token": urlString, "max-validity": ms, ...}``) that
        ``renewer`` (the RM's own principal) may renew; Kerberos authentication only."""
        try:
            got = self._request("POST", "/delegation-token", json={"renewer": renewer}).json()
        except BackendError as e:
            raise BackendError(
                f"could not get a delegation token from the YARN ResourceManager: {e}"
            ) from None
        return got

    def renew_token(self, token: str) -> float:
        """Renew an RM delegation token whose renewer is this client's user; its new expiry
        (epoch seconds)."""
        got = self._request(
            "POST",
            "/delegation-token/expiration",
            headers={"Hadoop-YARN-RM-Delegation-Token": token},
        ).json()
        return int(got["expiration-time"]) / 1000

    # --- applications ----------------------------------------------------------------------

    def new_application(self) -> str:
        return self._request("POST", "/apps/new-application").json()["application-id"]

    def submit(self, context: dict) -> None:
        r = self._request("POST", "/apps", ok=(200, 202, 400, 403), json=context)
        if r.status_code in (400, 403):
            why = _message(r)
            if "permission to submit" in why:  # the queue's ACL (acl_submit_applications)
                refused = outcome.QueueRefused(context.get("queue"), self.user, why)
                raise BackendError(outcome.words(refused))
            raise BackendError(
                f"the ResourceManager ({self.address.url}) refused the application: {why}"
            )

    def app(self, app_id: str) -> dict | None:
        r = self._request("GET", f"/apps/{app_id}", ok=(200, 404))
        return r.json().get("app") if r.status_code == 200 else None

    def apps(self, states: tuple[str, ...] = (), app_type: str = APP_TYPE) -> list[dict]:
        params = {"applicationTypes": app_type, "user": self.user}
        if states:
            params["states"] = ",".join(states)
        got = self._request("GET", "/apps", params=params).json().get("apps") or {}
        return as_list(got.get("app"))

    def queue_apps(self, queue: str, states: tuple[str, ...]) -> list[dict]:
        """Every user's applications of any type in ``queue`` (the RM's view ACL decides what
        of another's it shows)."""
        params = {"queue": queue, "states": ",".join(states)}
        got = self._request("GET", "/apps", params=params).json().get("apps") or {}
        return as_list(got.get("app"))

    def kill(self, app_id: str, timeout: float = 30.0) -> None:
        """PUT state KILLED until the RM says the app has ended (202 means still killing)."""
        deadline = time.monotonic() + timeout
        while True:
            app = self.app(app_id)
            if app is None or app.get("state") in TERMINAL_APP_STATES:
                return
            self._request(
                "PUT", f"/apps/{app_id}/state", ok=(200, 202, 400), json={"state": "KILLED"}
            )
            if time.monotonic() > deadline:
                raise BackendError(f"YARN did not kill {app_id} within {timeout:g} s")
            time.sleep(0.2)

    def containers(self, app_id: str) -> list[dict]:
        """Every container of the app's attempts (RUNNING or just finished)."""
        attempts = self._request("GET", f"/apps/{app_id}/appattempts").json()
        out = []
        for a in as_list((attempts.get("appAttempts") or {}).get("appAttempt")):
            aid = a.get("appAttemptId") or a.get("id")
            got = self._request(
                "GET", f"/apps/{app_id}/appattempts/{aid}/containers", ok=(200, 404)
            )
            if got.status_code == 200:
                out += as_list((got.json() or {}).get("container"))
        return out


def am_placed(app: dict) -> bool:
    """The application report says its AM has a container (allocated, launched or running):
    an ACCEPTED application without one is waiting in its queue."""
    return bool(
        app.get("amContainerLogs")
        or app.get("amHostHttpAddress")
        or "AM container is launched" in str(app.get("diagnostics", ""))
    )


def _standby(r: requests.Response, path: str) -> bool:
    """A standby RM's answer: its web filter redirects REST calls to the active one (307, "This
    is standby RM"), or answers 503 while no active is known; ``/info`` it serves itself, with
    ``haState``. We go to the next configured RM rather than follow the redirect: the address
    the standby names is its own configuration's, which need not resolve from here."""
    if 300 <= r.status_code < 400 or r.status_code == 503:
        return True
    if r.status_code == 200 and path.rstrip("/") in ("", "/info"):
        try:
            return (r.json().get("clusterInfo") or {}).get("haState") == "STANDBY"
        except ValueError:
            return False
    return False


def _message(r: requests.Response) -> str:
    try:
        return str(r.json()["RemoteException"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return r.text[:300]
