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
from .numbers import MAX_SECONDS, parse_memory, shown, whole
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


# --- TonY configuration keys -------------------------------------------------------------

_PER_TYPE_KEYS = ("instances", "memory", "vcores", "gpus", "node-label")
_JOB_KEYS = {
    "tony.application.name": "name",
    "tony.application.queue": "queue",
    "tony.yarn.queue": "queue",
    "tony.application.num-retries": "num_retries",
    "tony.application.timeout": "timeout_ms",
    "tony.application.untracked.jobtypes": "untracked",
    "tony.application.node-label": "node_label",
    "tony.task.heartbeat-interval-ms": "heartbeat_interval_ms",
    "tony.task.max-missed-heartbeats": "max_missed_heartbeats",
    "tony.task.registration-timeout-sec": "registration_timeout_s",
    "tony.task.am-lost-sec": "am_lost_s",
    "tony.task.exclusion-wait-sec": "exclusion_wait_s",
    "tony.task.localization-timeout-sec": "localization_timeout_s",
    "tony.task.completion-grace-sec": "completion_grace_s",
    "tony.am.memory": "am_memory",
    "tony.am.vcores": "am_vcores",
    "tony.am.linger-sec": "am_linger_s",
    "tony.am.retry-count": "am_retries",
    "tony.containers.envs": "env",
    "tony.execution.envs": "env",
    "tony.keras.legacy": "legacy_keras",
    "tony.application.framework": "framework",
    "tony.task.max-total-instances": "max_total_instances",
    "tony.task.max-total-gpus": "max_total_gpus",
    "tony.am.wait-client-signal-stop-timeout-sec": "am_linger_s",
    "tony.container.allocation.timeout": "allocation_timeout_ms",
    "tony.other.namenodes": "other_namenodes",
}


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
        if what == "instances":
            self.instances[type_] = whole(value, key)
        elif what == "memory":
            self.memory[type_] = parse_memory(value, key)
        elif what == "vcores":
            self.vcores[type_] = whole(value, key, minimum=1)
        elif what == "gpus":
            self.gpus[type_] = whole(value, key)
        else:
            self.node_label[type_] = value

    def _apply_job_key(self, key: str, what: str, value: str) -> None:
        if what in ("name", "queue"):
            self.job[what] = value
        elif what == "num_retries":
            self.job["max_attempts"] = whole(value, key) + 1
        elif what == "timeout_ms":
            self.job["timeout_s"] = whole(value, key, maximum=MAX_MS) / 1000.0
        elif what == "other_namenodes":
            self.job[what] = tuple(u.strip() for u in value.split(",") if u.strip())
        elif what == "untracked":
            self.untracked = tuple(t.strip() for t in value.split(",") if t.strip())
        elif what == "node_label":
            self.default_node_label = value or None
        elif what == "am_retries":
            self.job["am_retries"] = whole(value, key)
        elif what == "am_memory":
            self.job["am_memory_mb"] = parse_memory(value, key)
        elif what == "heartbeat_interval_ms":
            self.job[what] = whole(value, key, minimum=1, maximum=MAX_HEARTBEAT_MS)
        elif what == "max_missed_heartbeats":
            self.job[what] = whole(value, key, minimum=1, maximum=MAX_MISSED_HEARTBEATS)
        elif what == "am_vcores":
            self.job[what] = whole(value, key, minimum=1)
        elif what in (
            "registration_timeout_s",
            "am_lost_s",
            "exclusion_wait_s",
            "localization_timeout_s",
            "completion_grace_s",
            "am_linger_s",
        ):
            self.job[what] = float(whole(value, key, maximum=int(MAX_SECONDS)))
        elif what == "env":
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
                self.env[k] = v
        elif what == "legacy_keras":
            self.job["legacy_keras"] = _parse_bool(value, key)
        elif what == "framework":
            self.job["framework"] = parse_framework(value, key)
        elif what in ("max_total_instances", "max_total_gpus"):
            limit = whole(value, key, minimum=-1)
            if limit >= 0:
                self.limits[key] = limit
        elif what == "allocation_timeout_ms":
            timeout_ms = whole(value, key, minimum=-1, maximum=MAX_MS)
            if timeout_ms > 0:
                self.job["registration_timeout_s"] = timeout_ms / 1000.0

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
        return JobSpec(
            tasks=tuple(tasks),
            backend=self.backend,
            untracked=untracked,
            env=tuple(sorted({**forwarded_env(), **self.env}.items())),
            pull=self.pull,
            **job,  # type: ignore[arg-type]
        )
