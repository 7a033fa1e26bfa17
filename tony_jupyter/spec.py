"""JobSpec and TaskSpec: the one description of a job shared by magic, launcher, AM and executor.

Crosses process boundaries as JSON with a schema version. TonY's configuration keys
(``tony.worker.instances``, ``tony.ps.memory``, ...) are accepted through :func:`apply_conf`.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SpecError
from .frameworks import check_tasks, parse_framework
from .jobdir import JobDir
from .numbers import JAVA_INT_MAX, MAX_SECONDS, parse_memory, shown, whole
from .tonyconf import HARMLESS, NOT_APPLICABLE

# Set in the notebook's environment, these reach every task as they are (the chief's MLflow run,
# executor/mlflow_run.py). Credentials (MLFLOW_TRACKING_TOKEN...) go only where asked:
# --conf tony.containers.envs=NAME=VALUE.
FORWARDED_ENV = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_ALLOW_FILE_STORE",
)


def forwarded_env(environ=None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in FORWARDED_ENV if environ.get(k)}


# 2: variables by name (spec.json, the history and every API name them only); their values
# in the job directory's env.json (jobdir.ENV, mode 600), for the AM, kept in no history.
SCHEMA_VERSION = 2

# The order tasks are listed and launched in; custom types sort after these.
KNOWN_TYPES = ("chief", "worker", "ps", "evaluator")
_TYPE_RE = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_MS = int(MAX_SECONDS * 1000)
MAX_HEARTBEAT_MS = 3_600_000  # an hour between heartbeats already detects nothing
MAX_MISSED_HEARTBEATS = 1_000_000


def _parse_bool(value: str | bool, what: str) -> bool:
    if isinstance(value, bool):
        return value
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise SpecError(f"{what}: expected true or false, got {value!r}")


@dataclass(frozen=True)
class TaskSpec:
    type: str
    instances: int
    memory_mb: int = 2048
    vcores: int = 1
    gpus: int = 0
    node_label: str | None = None


@dataclass(frozen=True)
class JobSpec:
    name: str
    tasks: tuple[TaskSpec, ...]
    backend: str = "local"
    queue: str = "default"
    max_attempts: int = 1
    timeout_s: float = 0.0
    untracked: tuple[str, ...] = ("ps",)
    heartbeat_interval_ms: int = 1000
    max_missed_heartbeats: int = 8
    # A task's sidecar ends the task after this long without an answer from the AM (0: twice
    # the AM's missed-heartbeat limit).
    am_lost_s: float = 0.0
    # The host of a task lost by missed heartbeats sits out the next attempts until tasks have
    # waited this long for a container (am/exclusions.py); 0: no exclusion.
    exclusion_wait_s: float = 30.0
    registration_timeout_s: float = 120.0  # from the task's container running (past localizing)
    localization_timeout_s: float = 1800.0  # YARN: a NodeManager fetching and unpacking its files
    completion_grace_s: float = 30.0
    # A running job whose tasks all heartbeat but none reports a new step for longer than
    # stall_factor x its recent median step interval, within [floor, ceiling] seconds, is
    # stalled (am/stalls.py); then stall_action: warn, kill or restart (the attempt).
    stall_factor: int = 10
    stall_floor_s: float = 60.0
    stall_ceiling_s: float = 1800.0  # 0: no stall detection
    stall_action: str = "warn"
    am_linger_s: float = 30.0
    am_memory_mb: int = 1024
    am_vcores: int = 1
    am_retries: int = 0  # YARN: AM attempts after the first (tony.am.retry-count, as TonY)
    legacy_keras: bool = True
    # tensorflow | pytorch | jax: the environment each task gets (executor/frameworks.py)
    framework: str = "tensorflow"
    procs_per_task: int = 1  # PyTorch: processes per task, torchrun's --nproc-per-node
    # PyTorch: an elastic job (--workers MIN:MAX) when above 0; the workers' instances are MAX
    min_workers: int = 0
    tensorboard: bool = True  # the chief starts TensorBoard on tensorboard_dir()
    session: bool = False  # executors stay up and run cell after cell (%tony session)
    idle_timeout_s: float = 3600.0  # a session with no cell for this long stops
    env: tuple[tuple[str, str], ...] = ()
    pull: tuple[str, ...] = ()
    python: str = ""  # YARN: the Python on the nodes for the AM and executors ("" = this one)
    pack_env: str = ""  # YARN: a venv packed and localized as the ARCHIVE "env" (--pack-env)
    keep_staging: bool = False  # YARN: keep the HDFS staging directory after the job
    # YARN with Kerberos: a keytab to log in with (else the ticket cache), and the NameNodes
    # besides the default FS that the job needs delegation tokens for (tony.other.namenodes).
    principal: str = ""
    keytab: str = ""
    other_namenodes: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def task(self, type_: str) -> TaskSpec:
        for t in self.tasks:
            if t.type == type_:
                return t
        raise KeyError(type_)

    def task_ids(self) -> list[str]:
        return [f"{t.type}:{i}" for t in self.tasks for i in range(t.instances)]

    @property
    def chief_id(self) -> str:
        """The task whose last expression is the cell's result (TensorFlow's chief rule)."""
        types = {t.type for t in self.tasks if t.instances}
        return (
            "chief:0"
            if "chief" in types
            else "worker:0"
            if "worker" in types
            else self.task_ids()[0]
        )

    @property
    def elastic(self) -> bool:
        """Workers run under PyTorch's elastic agent; a lost one is replaced (am/elastic.py)."""
        return self.min_workers > 0

    def is_tracked(self, type_: str) -> bool:
        return type_ not in self.untracked

    def to_json(self) -> str:
        """The spec as records and APIs keep it: its variables by name; values: env_json()."""
        d = dataclasses.asdict(self)
        d["env"] = [name for name, _ in self.env]
        return json.dumps(d, indent=1, sort_keys=True)

    def env_json(self) -> str:
        """The values of the spec's variables, for env.json."""
        return json.dumps(dict(self.env), sort_keys=True)

    @classmethod
    def read(cls, job_dir: Path) -> JobSpec:
        """The job's spec as its AM runs it: spec.json with its variables' values (env.json)."""
        text = JobDir(job_dir).spec.read_text()
        path = JobDir(job_dir).env
        values = json.loads(path.read_text()) if path.exists() else {}
        if not isinstance(values, dict):
            raise SpecError(f"{path} is not a JSON object of variables; submit the job again")
        spec = cls.from_json(text, values)
        missing = sorted(set(json.loads(text)["env"]) - set(values))
        if missing:
            raise SpecError(
                f"{path} has no value for {', '.join(missing)}, which the job's spec names: "
                "the job's files are incomplete; submit it again"
            )
        return spec

    @classmethod
    def from_json(cls, text: str, env_values: dict[str, str] | None = None) -> JobSpec:
        """A spec from spec.json; its variables as ``env_values`` has them (JobSpec.read)."""
        d = json.loads(text)
        if d.get("schema_version") != SCHEMA_VERSION:
            raise SpecError(
                f"job spec schema {d.get('schema_version')} is not {SCHEMA_VERSION}: "
                "the AM and the notebook run different tony-jupyter versions; install the same one"
            )
        d["tasks"] = tuple(TaskSpec(**t) for t in d["tasks"])
        for k in ("untracked", "pull", "other_namenodes"):
            d[k] = tuple(d.get(k, ()))
        values = env_values or {}
        d["env"] = tuple((name, str(values[name])) for name in d["env"] if name in values)
        return cls(**d)


STALL_ACTIONS = ("warn", "kill", "restart")  # tony.stall.action

# --- TonY configuration keys -------------------------------------------------------------


@dataclass(frozen=True)
class ConfKey:
    """A TonY key tony-jupyter honours: the one declaration that SpecBuilder applies and the
    docs' configuration reference lists (docs/_ext/tony_reference.py)."""

    what: str  # the builder's slot: a JobSpec field, or how SpecBuilder._apply_job_key turns it
    kind: str  # how its value reads: text, names (a,b), pairs (A=1,B=2), whole, memory, bool,
    # framework
    help: str
    minimum: int = 0  # whole: the bounds
    maximum: int = JAVA_INT_MAX
    unit: str = ""  # whole: ms or s


def _seconds(what: str, help: str) -> ConfKey:
    return ConfKey(what, "whole", help, maximum=int(MAX_SECONDS), unit="s")


_PER_TYPE: dict[str, ConfKey] = {
    "instances": ConfKey("instances", "whole", "tasks of this type (--workers, --ps, ...)"),
    "memory": ConfKey("memory_mb", "memory", "memory per task of this type, e.g. 2g (--memory)"),
    "vcores": ConfKey("vcores", "whole", "vcores per task of this type (--vcores)", minimum=1),
    "gpus": ConfKey("gpus", "whole", "GPUs per task of this type (--gpus)"),
    "node-label": ConfKey("node_label", "text", "YARN: the node label of this type's tasks"),
}
_PER_TYPE_KEYS = tuple(_PER_TYPE)
_ENV = "NAME=VALUE pairs set in every task's environment (not TONY_* names)"
_JOB_KEYS: dict[str, ConfKey] = {
    "tony.application.name": ConfKey("name", "text", "the job's name (--name)"),
    "tony.application.queue": ConfKey("queue", "text", "YARN: the queue (--queue)"),
    "tony.yarn.queue": ConfKey("queue", "text", "YARN: the queue, as tony.application.queue"),
    "tony.application.num-retries": ConfKey(
        "num_retries", "whole", "attempts after the first: --max-attempts is this + 1"
    ),
    "tony.application.timeout": ConfKey(
        "timeout_ms",
        "whole",
        "the whole job's limit; 0: none (--timeout)",
        maximum=MAX_MS,
        unit="ms",
    ),
    "tony.application.untracked.jobtypes": ConfKey(
        "untracked",
        "names",
        "task types whose end does not end the job (ps by default; with a "
        "chief and parameter servers, ps and worker)",
    ),
    "tony.application.node-label": ConfKey(
        "node_label", "text", "YARN: the node label of every task (--node-label)"
    ),
    "tony.task.heartbeat-interval-ms": ConfKey(
        "heartbeat_interval_ms",
        "whole",
        "how often each task heartbeats",
        minimum=1,
        maximum=MAX_HEARTBEAT_MS,
        unit="ms",
    ),
    "tony.task.max-missed-heartbeats": ConfKey(
        "max_missed_heartbeats",
        "whole",
        "heartbeats a task may miss before it is lost and its attempt fails",
        minimum=1,
        maximum=MAX_MISSED_HEARTBEATS,
    ),
    "tony.task.registration-timeout-sec": _seconds(
        "registration_timeout_s",
        "a task not registered this long after its container runs fails the attempt",
    ),
    "tony.task.am-lost-sec": _seconds(
        "am_lost_s",
        "a task's sidecar ends the task after this long without an answer "
        "from the AM; 0: twice the AM's missed-heartbeat limit",
    ),
    "tony.task.exclusion-wait-sec": _seconds(
        "exclusion_wait_s",
        "YARN: a lost task's host sits out the next attempts until "
        "their tasks have waited this long for a container; 0: no exclusion",
    ),
    "tony.task.localization-timeout-sec": _seconds(
        "localization_timeout_s",
        "YARN: how long a NodeManager may fetch and unpack a container's files",
    ),
    "tony.task.completion-grace-sec": _seconds(
        "completion_grace_s",
        "tasks still running this long after the chief succeeded are stopped, and the job fails",
    ),
    "tony.stall.factor": ConfKey(
        "stall_factor",
        "whole",
        "a job is stalled when no task reports a new step for this many times its recent "
        "median step interval (within the floor and ceiling)",
        minimum=1,
        maximum=1000,
    ),
    "tony.stall.floor-sec": _seconds(
        "stall_floor_s", "a job is never stalled after less than this without a new step"
    ),
    "tony.stall.ceiling-sec": _seconds(
        "stall_ceiling_s",
        "a job whose tasks heartbeat is stalled after this long without a new step, "
        "whatever its step times; 0: no stall detection",
    ),
    "tony.stall.action": ConfKey(
        "stall_action",
        "text",
        "what a stall does: warn (mark the job stalled, attach its stacks), kill (the job) "
        "or restart (fail the attempt: the next one starts if --max-attempts allows)",
    ),
    "tony.am.memory": ConfKey("am_memory", "memory", "the AM's memory, e.g. 1g"),
    "tony.am.vcores": ConfKey("am_vcores", "whole", "the AM's vcores", minimum=1),
    "tony.am.linger-sec": _seconds(
        "am_linger_s",
        "how long the AM stays, after the job ends, for the notebook to read its result",
    ),
    "tony.am.retry-count": ConfKey(
        "am_retries", "whole", "YARN: AM attempts after the first (a lost AM is restarted)"
    ),
    "tony.containers.envs": ConfKey("env", "pairs", _ENV),
    "tony.execution.envs": ConfKey("env", "pairs", _ENV + ", as tony.containers.envs"),
    "tony.keras.legacy": ConfKey(
        "legacy_keras",
        "bool",
        "run tf.keras as Keras 2 (TF_USE_LEGACY_KERAS=1); false: Keras 3 (--keras3)",
    ),
    "tony.application.framework": ConfKey(
        "framework", "framework", "tensorflow, pytorch or jax (--framework)"
    ),
    "tony.task.max-total-instances": ConfKey(
        "max_total_instances",
        "whole",
        "the job may ask for at most this many tasks; -1: no limit",
        minimum=-1,
    ),
    "tony.task.max-total-gpus": ConfKey(
        "max_total_gpus",
        "whole",
        "the job may ask for at most this many GPUs; -1: no limit",
        minimum=-1,
    ),
    "tony.am.wait-client-signal-stop-timeout-sec": _seconds(
        "am_linger_s", "as tony.am.linger-sec (TonY's name for it)"
    ),
    "tony.container.allocation.timeout": ConfKey(
        "allocation_timeout_ms",
        "whole",
        "above 0: sets tony.task.registration-timeout-sec",
        minimum=-1,
        maximum=MAX_MS,
        unit="ms",
    ),
    "tony.other.namenodes": ConfKey(
        "other_namenodes",
        "names",
        "secure YARN: NameNodes besides the default FS that the job needs delegation tokens for",
    ),
}


def _read(key: str, k: ConfKey, value: str):
    """A key's value as its ConfKey's kind reads it, within its bounds."""
    if k.kind == "whole":
        return whole(value, key, minimum=k.minimum, maximum=k.maximum)
    if k.kind == "memory":
        return parse_memory(value, key)
    if k.kind == "bool":
        return _parse_bool(value, key)
    if k.kind == "framework":
        return parse_framework(value, key)
    if k.kind == "names":
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if k.kind == "pairs":
        return _pairs(key, value)
    return value


def _pairs(key: str, value: str) -> dict[str, str]:
    env = {}
    for pair in filter(None, (p.strip() for p in value.split(","))):
        k, sep, v = pair.partition("=")
        if not sep or not k:
            raise SpecError(f"{key}: expected NAME=VALUE pairs, got {shown(pair)}")
        if "\0" in pair:
            raise SpecError(
                f"{key}: {shown(pair)} holds a NUL character, which no environment "
                "variable can; remove it"
            )
        if k.upper().startswith("TONY_"):
            raise SpecError(
                f"{key}: {k} is tony-jupyter's own (TONY_* variables tell each task its "
                "AM, token and role); name your variable otherwise"
            )
        env[k] = v
    return env


@dataclass
class SpecBuilder:
    """Mutable staging area for flags and conf keys; :meth:`build` validates into a JobSpec."""

    name: str = "tony-job"
    backend: str = "local"
    instances: dict[str, int] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    vcores: dict[str, int] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)
    node_label: dict[str, str] = field(default_factory=dict)
    default_memory: int = 2048
    default_vcores: int = 1
    default_gpus: int = 0
    default_node_label: str | None = None
    job: dict[str, object] = field(default_factory=dict)
    untracked: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    pull: tuple[str, ...] = ()
    limits: dict[str, int] = field(default_factory=dict)  # tony.task.max-total-*
    not_applicable: dict[str, str] = field(default_factory=dict)  # TonY key -> why ignored

    def apply_conf(self, key: str, value: str) -> None:
        key = key.strip()
        value = value.strip()
        if key in NOT_APPLICABLE:
            if value.lower() not in HARMLESS.get(key, ()):
                self.not_applicable[key] = NOT_APPLICABLE[key]
            return
        if key in _JOB_KEYS:
            self._apply_job_key(key, _JOB_KEYS[key], value)
            return
        parts = key.split(".")
        if len(parts) == 3 and parts[0] == "tony" and parts[2] in _PER_TYPE_KEYS:
            type_, what = parts[1], parts[2]
            if type_ not in KNOWN_TYPES:
                close = difflib.get_close_matches(type_, KNOWN_TYPES, n=1, cutoff=0.7)
                if close or not _TYPE_RE.match(type_):
                    hint = f"; did you mean tony.{close[0]}.{what}?" if close else ""
                    raise SpecError(f"unknown task type {type_!r} in --conf {key}{hint}")
            self._apply_type_key(type_, what, value, key)
            return
        known = (
            list(_JOB_KEYS)
            + list(NOT_APPLICABLE)
            + [f"tony.{t}.{k}" for t in KNOWN_TYPES for k in _PER_TYPE_KEYS]
        )
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; see `%tony help` for the keys"
        raise SpecError(f"unknown configuration key {key!r}{hint}")

    def _apply_type_key(self, type_: str, what: str, value: str, key: str) -> None:
        v = _read(key, _PER_TYPE[what], value)
        slots = {
            "instances": self.instances,
            "memory": self.memory,
            "vcores": self.vcores,
            "gpus": self.gpus,
            "node-label": self.node_label,
        }
        slots[what][type_] = v  # type: ignore[index]

    def _apply_job_key(self, key: str, k: ConfKey, value: str) -> None:
        """The value read as ``k`` says, put where it says."""
        v = _read(key, k, value)
        what = k.what
        if what == "num_retries":
            self.job["max_attempts"] = v + 1
        elif what == "timeout_ms":
            self.job["timeout_s"] = v / 1000.0
        elif what == "untracked":
            self.untracked = v
        elif what == "node_label":
            self.default_node_label = v or None
        elif what == "am_memory":
            self.job["am_memory_mb"] = v
        elif what == "env":
            self.env.update(v)
        elif what in ("max_total_instances", "max_total_gpus"):
            if v >= 0:
                self.limits[key] = v
        elif what == "stall_action":
            if v not in STALL_ACTIONS:
                raise SpecError(
                    f"{key}: expected one of {', '.join(STALL_ACTIONS)}, got {shown(v)}"
                )
            self.job[what] = v
        elif what == "allocation_timeout_ms":
            if v > 0:
                self.job["registration_timeout_s"] = v / 1000.0
        elif k.unit == "s":
            self.job[what] = float(v)
        else:
            self.job[what] = v

    def apply_conf_file(self, path: str | Path) -> None:
        """TonY's XML format: <configuration><property><name/><value/></property>..."""
        p = Path(path).expanduser()
        if not p.is_file():
            raise SpecError(f"--conf-file: no such file {str(p)!r}")
        try:
            root = ET.parse(p).getroot()
        except ET.ParseError as e:
            raise SpecError(
                f"--conf-file {p}: not valid XML ({e}); expected TonY's tony.xml format"
            ) from None
        for prop in root.iter("property"):
            name, value = prop.findtext("name"), prop.findtext("value")
            if name is None:
                raise SpecError(f"--conf-file {p}: a <property> lacks its <name>")
            if value is not None:  # as Hadoop's Configuration: no <value>, nothing set
                self.apply_conf(name, value)

    def build(self) -> JobSpec:
        counts = {t: n for t, n in self.instances.items() if n}
        if not counts.get("worker") and not counts.get("chief"):
            raise SpecError("the job has no worker or chief: use --workers N (N >= 1) or --chief")
        order = {t: i for i, t in enumerate(KNOWN_TYPES)}
        tasks = []
        for type_ in sorted(counts, key=lambda t: (order.get(t, len(order)), t)):
            training = type_ in ("chief", "worker")
            tasks.append(
                TaskSpec(
                    type=type_,
                    instances=counts[type_],
                    memory_mb=self.memory.get(type_, self.default_memory),
                    vcores=self.vcores.get(type_, self.default_vcores),
                    gpus=self.gpus.get(type_, self.default_gpus if training else 0),
                    node_label=self.node_label.get(type_, self.default_node_label),
                )
            )
        untracked = self.untracked
        if untracked is None:
            # TF2 ParameterServerStrategy: workers and ps only serve (server.join()) and the
            # chief drives training, so only the chief's end can end the job.
            untracked = ("ps", "worker") if counts.get("chief") and counts.get("ps") else ("ps",)
        if not any(t.type not in untracked for t in tasks):
            raise SpecError(
                f"every task type is untracked ({', '.join(untracked)}): the job could never end; "
                "leave at least the chief or the workers tracked"
            )
        totals = {
            "tony.task.max-total-instances": sum(t.instances for t in tasks),
            "tony.task.max-total-gpus": sum(t.instances * t.gpus for t in tasks),
        }
        for key, limit in self.limits.items():
            if totals[key] > limit:
                what = "tasks" if key.endswith("instances") else "GPUs"
                raise SpecError(
                    f"the job asks for {totals[key]} {what} in all, above {key}={limit}: "
                    "ask for fewer, or raise the limit"
                )
        job = dict(self.job)
        job.setdefault("name", self.name)
        check_tasks(job, tasks)
        if int(job.get("max_attempts", 1)) < 1:  # type: ignore[call-overload]
            raise SpecError("--max-attempts must be at least 1")
        floor = float(job.get("stall_floor_s", JobSpec.stall_floor_s))  # type: ignore[arg-type]
        ceiling = float(job.get("stall_ceiling_s", JobSpec.stall_ceiling_s))  # type: ignore[arg-type]
        if ceiling and ceiling < floor:
            raise SpecError(
                f"tony.stall.ceiling-sec={ceiling:g} is below tony.stall.floor-sec={floor:g}: "
                "raise the ceiling or lower the floor (ceiling 0 turns stall detection off)"
            )
        return JobSpec(
            tasks=tuple(tasks),
            backend=self.backend,
            untracked=untracked,
            env=tuple(sorted({**forwarded_env(), **self.env}.items())),
            pull=self.pull,
            **job,  # type: ignore[arg-type]
        )
