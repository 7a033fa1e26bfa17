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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SpecError
from .frameworks import check_tasks, parse_framework
from .jobdir import JobDir
from .numbers import parse_memory, shown, whole
from .protocol.taskid import task_id
from .settings import HEARTBEAT_INTERVAL_MS, JOB_KEYS, MAX_MISSED_HEARTBEATS, PER_TYPE, Setting
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
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS
    max_missed_heartbeats: int = MAX_MISSED_HEARTBEATS
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
    # tensorflow | pytorch | jax: the environment each task gets (executor/frameworkenv.py)
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
    # YARN with pack_env: auto | always | never ship the venv's base interpreter
    # (launcher/yarn/shipchoice.py)
    ship_python: str = "auto"
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
        return [task_id(t.type, i) for t in self.tasks for i in range(t.instances)]

    @property
    def chief_id(self) -> str:
        """The task whose last expression is the cell's result (TensorFlow's chief rule)."""
        types = {t.type for t in self.tasks if t.instances}
        first = next((t for t in ("chief", "worker") if t in types), None)
        return task_id(first, 0) if first else self.task_ids()[0]

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


# --- TonY configuration keys (settings.py's table) -----------------------------------------


def _read(key: str, k: Setting, value: str) -> Any:
    """A key's value as its row's kind reads it, within its bounds."""
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
    if k.kind == "choice" and value not in k.choices:
        raise SpecError(f"{key}: expected one of {', '.join(k.choices)}, got {shown(value)}")
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


# Each JobSpec field with a default, and the type of its values (SpecBuilder.set checks it).
FIELD_TYPES: dict[str, type] = {"name": str} | {
    f.name: type(f.default)
    for f in dataclasses.fields(JobSpec)
    if f.default is not dataclasses.MISSING and f.name != "schema_version"
}


def _in_unit(k: Setting, v: Any) -> Any:
    """A key's value in its field's unit: ms -> s for a field in seconds."""
    return v / 1000.0 if k.unit == "ms" and k.field.endswith("_s") else v


def _set(b: SpecBuilder, key: str, k: Setting, v: Any) -> None:
    b.set(k.field, _in_unit(k, v))


def _limit(b: SpecBuilder, key: str, k: Setting, v: Any) -> None:
    if v >= 0:
        b.limits[key] = v


def _registration(b: SpecBuilder, key: str, k: Setting, v: Any) -> None:
    if v > 0:
        b.set(k.field, _in_unit(k, v))


def _node_label(b: SpecBuilder, key: str, k: Setting, v: Any) -> None:
    b.default_node_label = v or None


def _untracked(b: SpecBuilder, key: str, k: Setting, v: Any) -> None:
    b.untracked = v


# How a key's value goes into the spec: settings.py's ``how`` column.
APPLY: dict[str, Callable[[SpecBuilder, str, Setting, Any], None]] = {
    "set": _set,
    "plus_one": lambda b, key, k, v: b.set(k.field, v + 1),
    "untracked": _untracked,
    "node_label": _node_label,
    "env": lambda b, key, k, v: b.env.update(v),
    "limit": _limit,
    "registration": _registration,
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
    # JobSpec fields, each of its own type: set() checks it, so build() may unpack them
    fields: dict[str, Any] = field(default_factory=dict)
    untracked: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    pull: tuple[str, ...] = ()
    limits: dict[str, int] = field(default_factory=dict)  # tony.task.max-total-*
    not_applicable: dict[str, str] = field(default_factory=dict)  # TonY key -> why ignored

    def set(self, name: str, value: object) -> None:
        """A JobSpec field, of its own type (an int where a float is due is made one)."""
        want = FIELD_TYPES[name]
        if want is float and type(value) is int:
            value = float(value)
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise TypeError(f"JobSpec.{name} takes {want.__name__}, not {value!r}")
        self.fields[name] = value

    def apply_conf(self, key: str, value: str) -> None:
        key = key.strip()
        value = value.strip()
        if key in NOT_APPLICABLE:
            if value.lower() not in HARMLESS.get(key, ()):
                self.not_applicable[key] = NOT_APPLICABLE[key]
            return
        if key in JOB_KEYS:
            k = JOB_KEYS[key]
            APPLY[k.how](self, key, k, _read(key, k, value))
            return
        parts = key.split(".")
        if len(parts) == 3 and parts[0] == "tony" and parts[2] in PER_TYPE:
            type_, what = parts[1], parts[2]
            if type_ not in KNOWN_TYPES:
                close = difflib.get_close_matches(type_, KNOWN_TYPES, n=1, cutoff=0.7)
                if close or not _TYPE_RE.match(type_):
                    hint = f"; did you mean tony.{close[0]}.{what}?" if close else ""
                    raise SpecError(f"unknown task type {type_!r} in --conf {key}{hint}")
            self._apply_type_key(type_, what, value, key)
            return
        known = (
            list(JOB_KEYS)
            + list(NOT_APPLICABLE)
            + [f"tony.{t}.{k}" for t in KNOWN_TYPES for k in PER_TYPE]
        )
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; see `%tony help` for the keys"
        raise SpecError(f"unknown configuration key {key!r}{hint}")

    def _apply_type_key(self, type_: str, what: str, value: str, key: str) -> None:
        slots: dict[str, dict[str, Any]] = {
            "instances": self.instances,
            "memory": self.memory,
            "vcores": self.vcores,
            "gpus": self.gpus,
            "node-label": self.node_label,
        }
        slots[what][type_] = _read(key, PER_TYPE[what], value)

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
        spec = JobSpec(
            name=self.name,
            tasks=tuple(tasks),
            backend=self.backend,
            untracked=untracked,
            env=tuple(sorted({**forwarded_env(), **self.env}.items())),
            pull=self.pull,
        )
        spec = dataclasses.replace(spec, **self.fields)
        check_tasks(spec, tasks)
        if spec.max_attempts < 1:
            raise SpecError("--max-attempts must be at least 1")
        if spec.stall_ceiling_s and spec.stall_ceiling_s < spec.stall_floor_s:
            raise SpecError(
                f"tony.stall.ceiling-sec={spec.stall_ceiling_s:g} is below tony.stall.floor-sec="
                f"{spec.stall_floor_s:g}: raise the ceiling or lower the floor (ceiling 0 turns "
                "stall detection off)"
            )
        return spec
