"""The one table of a job's settings: every %%tony flag and TonY key, with what it sets.

Each row is one spelling (a flag, ``--max-attempts``; or a TonY key,
``tony.application.num-retries``) of one setting: the field it sets, how its value reads, its
bounds, its help and where it applies (``job``: a JobSpec field; ``task``: a TaskSpec field, per
task type; ``session``: ``%tony session start``; ``run``: how the job is submitted or what
comes back, not in its spec). The ``%%tony`` parser (options.py), ``tony.xml``/``--conf``
(spec.py's SpecBuilder), the JobSpec's construction and the docs' references
(docs/_ext/tony_reference.py) are all read from it: a new setting is one row here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .numbers import JAVA_INT_MAX, MAX_SECONDS

# The heartbeat's defaults: JobSpec's and the executor's environment's (core/protocol/env.py).
HEARTBEAT_INTERVAL_MS = 1000
MAX_MISSED_HEARTBEATS = 8
MAX_MS = int(MAX_SECONDS * 1000)
MAX_HEARTBEAT_MS = 3_600_000  # an hour between heartbeats already detects nothing
MAX_MISSED = 1_000_000

SCOPES = ("job", "task", "session", "run")
# How a value reads. Flags: whole, seconds, workers (N or MIN:MAX), procs, text, memory,
# framework, switch (no value; sets ``value``), off (no value; sets ``value``), append
# (repeatable), optional (a value or none), choice. Keys: whole, memory, bool, framework, text,
# names (a,b), pairs (A=1,B=2).
KINDS = (
    "whole",
    "seconds",
    "workers",
    "procs",
    "text",
    "memory",
    "framework",
    "switch",
    "off",
    "append",
    "optional",
    "choice",
    "bool",
    "names",
    "pairs",
)
# How a key's value is put in the spec (SpecBuilder.APPLY): set (the field, in its own unit:
# ms -> s when the key is in ms and the field in s), plus_one (retries -> attempts), untracked,
# node_label (every task's), env, limit (a total checked as the spec is built; negative: none),
# registration (above 0: the registration timeout). Flags: set, task (every task's default),
# or special (options.spec_from_args reads it itself).
HOWS = ("set", "plus_one", "untracked", "node_label", "env", "limit", "registration", "task")


@dataclass(frozen=True)
class Setting:
    """One spelling of one setting."""

    name: str  # --flag, tony.key, or the per-type part of tony.<type>.key
    field: str  # the JobSpec (job) or TaskSpec (task) field it sets; "" for none
    kind: str
    help: str
    scope: str = "job"
    how: str = "set"
    metavar: str = ""
    minimum: int = 0  # whole: the bounds
    maximum: int = JAVA_INT_MAX
    unit: str = ""  # whole: ms or s
    dest: str = ""  # flags: argparse's dest, when not the flag's own name
    value: object = None  # switch/off: what the field becomes when the flag is given
    default: object = None  # flags: the value when not given
    choices: tuple[str, ...] = ()
    readme: bool = False  # a flag the README's table of the flags used most lists

    @property
    def is_flag(self) -> bool:
        return self.name.startswith("--")


def _secs(name: str, field: str, help: str) -> Setting:
    return Setting(name, field, "whole", help, maximum=int(MAX_SECONDS), unit="s")


_ENV = "NAME=VALUE pairs set in every task's environment (not TONY_* names)"

# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # --- %%tony's flags, in the order `%tony help` lists them ---------------------------------
    Setting("--workers", "instances", "workers", "number of worker tasks (default 1 when no "
            "--chief); PyTorch: MIN:MAX for an elastic job (torchrun's --nnodes MIN:MAX), where "
            "a lost worker is replaced", scope="task", how="special", metavar="N|MIN:MAX",
            readme=True),
    Setting("--framework", "framework", "framework", "tensorflow (default), pytorch or jax: the "
            "environment each task gets (tony.application.framework)", metavar="NAME",
            readme=True),
    Setting("--procs-per-task", "procs_per_task", "procs", "PyTorch: processes per task, each "
            "with its own LOCAL_RANK (torchrun's --nproc-per-node); at most --gpus when the "
            "tasks have GPUs", metavar="N"),
    Setting("--ps", "instances", "whole", "number of parameter servers", scope="task",
            how="special", metavar="N", default=0, readme=True),
    Setting("--chief", "instances", "switch", "add a chief task", scope="task", how="special",
            readme=True),
    Setting("--evaluator", "instances", "switch", "add an evaluator task", scope="task",
            how="special", readme=True),
    Setting("--memory", "memory_mb", "memory", "memory per task, e.g. 2g (tony.<type>.memory "
            "per type)", scope="task", how="task", metavar="SIZE", readme=True),
    Setting("--vcores", "vcores", "whole", "vcores per task", scope="task", how="task",
            metavar="N", minimum=1, readme=True),
    Setting("--gpus", "gpus", "whole", "GPUs per chief/worker task", scope="task", how="task",
            metavar="N", readme=True),
    Setting("--pull", "pull", "text", "names to bring back from the chief: a,b", how="special",
            metavar="NAME[,NAME]", default="", readme=True),
    Setting("--shard", "", "append", "split these DataFrames/Tables/arrays by rows: each "
            "chief/worker task gets its own rows (staged as Parquet)", scope="run",
            how="special", metavar="NAME[,NAME]", readme=True),
    Setting("--name", "name", "text", "job name", how="special",
            metavar="NAME", readme=True),
    Setting("--max-attempts", "max_attempts", "whole", "attempts of the whole job before it "
            "fails (default 1; tony.application.num-retries + 1)", metavar="N", minimum=1,
            readme=True),
    Setting("--timeout", "timeout_s", "seconds", "seconds before the job fails", metavar="S",
            readme=True),
    Setting("--async", "", "switch", "return at once", scope="run", how="special",
            dest="async_", readme=True),
    Setting("--backend", "backend", "choice", "where the tasks run (default: yarn when "
            "HADOOP_CONF_DIR is set, else local)", how="special", choices=("local", "yarn"),
            readme=True),
    Setting("--queue", "queue", "text", "YARN queue", metavar="NAME", readme=True),
    Setting("--node-label", "node_label", "text", "YARN node label for every task",
            scope="task", how="task", metavar="LABEL", readme=True),
    Setting("--python", "python", "text", "YARN: the Python executable on the cluster's nodes "
            "(default: this kernel's)", metavar="PATH", readme=True),
    Setting("--pack-env", "pack_env", "optional", "YARN: pack this venv (default: the "
            "kernel's, sys.prefix), upload it once per content hash and run the job in it "
            "instead of a Python already on the nodes; needs venv-pack; venvs only, not conda",
            how="special", metavar="VENV", readme=True),
    Setting("--ship-python", "ship_python", "choice", "YARN with --pack-env: ship the venv's "
            "base interpreter with it: auto (when it is a prefix of one CPython, as pyenv's and "
            "uv's are, unless the doctor's probe found it on the nodes), always (refused for a "
            "system Python, which cannot run from another path) or never (the nodes have it at "
            "the same path); tony.python.ship", metavar="WHEN",
            choices=("auto", "always", "never")),
    Setting("--principal", "principal", "text", "YARN with Kerberos: log in as this principal "
            "(with --keytab; default: the ticket cache's, after kinit)", metavar="PRINCIPAL"),
    Setting("--keytab", "keytab", "text", "YARN with Kerberos: the principal's keytab; tokens "
            "are then renewed past their maximum lifetime", metavar="PATH"),
    Setting("--keep-staging", "keep_staging", "switch", "YARN: keep the job's HDFS staging "
            "directory (with the AM's logs) after it ends", value=True),
    Setting("--conf", "", "append", "a TonY configuration key, e.g. tony.ps.memory=1g",
            how="special", metavar="KEY=VALUE", readme=True),
    Setting("--conf-file", "", "append", "TonY's tony.xml", how="special", metavar="PATH",
            readme=True),
    Setting("--keras3", "legacy_keras", "switch", "don't set TF_USE_LEGACY_KERAS=1 in the tasks "
            "(same as --conf tony.keras.legacy=false)", value=False, readme=True),
    Setting("--src-dir", "", "text", "ship DIR with the job (default: the script's directory for "
            "%%tony run, the notebook's working directory for a cell); tasks import from it and "
            "run in it", scope="run", how="special", metavar="DIR", readme=True),
    Setting("--no-src-dir", "", "off", "ship no directory with the job", scope="run",
            how="special", dest="ship_src"),
    Setting("--src-follow-links", "", "switch", "ship what links that lead out of the shipped "
            "directory point at (left out by default; pseudo-files and special files never "
            "are)", scope="run", how="special"),
    Setting("--no-tensorboard", "tensorboard", "off", "don't start TensorBoard beside the chief",
            dest="tensorboard", value=False),
    # --- %tony session start's own flags --------------------------------------------------------
    Setting("--idle-timeout", "idle_timeout_s", "seconds", "stop the session after S seconds "
            "without a cell", scope="session", how="special", metavar="S"),
    Setting("--detach", "", "switch", "keep the session running when the kernel shuts down",
            scope="session", how="special"),
    # --- TonY's keys (--conf KEY=VALUE, --conf-file tony.xml) -------------------------------
    Setting("tony.application.name", "name", "text", "the job's name (--name)"),
    Setting("tony.application.queue", "queue", "text", "YARN: the queue (--queue)"),
    Setting("tony.yarn.queue", "queue", "text", "YARN: the queue, as tony.application.queue"),
    Setting("tony.application.num-retries", "max_attempts", "whole", "attempts after the "
            "first: --max-attempts is this + 1", how="plus_one"),
    Setting("tony.application.timeout", "timeout_s", "whole", "the whole job's limit; 0: none "
            "(--timeout)", maximum=MAX_MS, unit="ms"),
    Setting("tony.application.untracked.jobtypes", "untracked", "names", "task types whose end "
            "does not end the job (ps by default; with a chief and parameter servers, ps and "
            "worker)", how="untracked"),
    Setting("tony.application.node-label", "node_label", "text", "YARN: the node label of "
            "every task (--node-label)", scope="task", how="node_label"),
    Setting("tony.task.heartbeat-interval-ms", "heartbeat_interval_ms", "whole", "how often "
            "each task heartbeats", minimum=1, maximum=MAX_HEARTBEAT_MS, unit="ms"),
    Setting("tony.task.max-missed-heartbeats", "max_missed_heartbeats", "whole", "heartbeats a "
            "task may miss before it is lost and its attempt fails", minimum=1,
            maximum=MAX_MISSED),
    _secs("tony.task.registration-timeout-sec", "registration_timeout_s", "a task not "
          "registered this long after its container runs fails the attempt"),
    _secs("tony.task.am-lost-sec", "am_lost_s", "a task's sidecar ends the task after this long "
          "without an answer from the AM; 0: twice the AM's missed-heartbeat limit"),
    _secs("tony.task.exclusion-wait-sec", "exclusion_wait_s", "YARN: a lost task's host sits "
          "out the next attempts until their tasks have waited this long for a container; 0: "
          "no exclusion"),
    _secs("tony.task.localization-timeout-sec", "localization_timeout_s", "YARN: how long a "
          "NodeManager may fetch and unpack a container's files"),
    _secs("tony.task.completion-grace-sec", "completion_grace_s", "tasks still running this "
          "long after the chief succeeded are stopped, and the job fails"),
    Setting("tony.stall.factor", "stall_factor", "whole", "a job is stalled when no task reports "
            "a new step for this many times its recent median step interval (within the floor "
            "and ceiling)", minimum=1, maximum=1000),
    _secs("tony.stall.floor-sec", "stall_floor_s", "a job is never stalled after less than this "
          "without a new step"),
    _secs("tony.stall.ceiling-sec", "stall_ceiling_s", "a job whose tasks heartbeat is stalled "
          "after this long without a new step, whatever its step times; 0: no stall detection"),
    Setting("tony.stall.action", "stall_action", "choice", "what a stall does: warn (mark the "
            "job stalled, attach its stacks), kill (the job) or restart (fail the attempt: the "
            "next one starts if --max-attempts allows)", choices=("warn", "kill", "restart")),
    Setting("tony.python.ship", "ship_python", "choice", "YARN with --pack-env: auto, always or "
            "never ship the venv's base interpreter with it (--ship-python)",
            choices=("auto", "always", "never")),
    Setting("tony.am.memory", "am_memory_mb", "memory", "the AM's memory, e.g. 1g"),
    Setting("tony.am.vcores", "am_vcores", "whole", "the AM's vcores", minimum=1),
    _secs("tony.am.linger-sec", "am_linger_s", "how long the AM stays, after the job ends, for "
          "the notebook to read its result"),
    Setting("tony.am.retry-count", "am_retries", "whole", "YARN: AM attempts after the first (a "
            "lost AM is restarted)"),
    Setting("tony.containers.envs", "env", "pairs", _ENV, how="env"),
    Setting("tony.execution.envs", "env", "pairs", _ENV + ", as tony.containers.envs",
            how="env"),
    Setting("tony.keras.legacy", "legacy_keras", "bool", "run tf.keras as Keras 2 "
            "(TF_USE_LEGACY_KERAS=1); false: Keras 3 (--keras3)"),
    Setting("tony.application.framework", "framework", "framework", "tensorflow, pytorch or "
            "jax (--framework)"),
    Setting("tony.task.max-total-instances", "", "whole", "the job may ask for at most this "
            "many tasks; -1: no limit", how="limit", minimum=-1),
    Setting("tony.task.max-total-gpus", "", "whole", "the job may ask for at most this many "
            "GPUs; -1: no limit", how="limit", minimum=-1),
    _secs("tony.am.wait-client-signal-stop-timeout-sec", "am_linger_s", "as tony.am.linger-sec "
          "(TonY's name for it)"),
    Setting("tony.container.allocation.timeout", "registration_timeout_s", "whole", "above 0: "
            "sets tony.task.registration-timeout-sec", how="registration", minimum=-1,
            maximum=MAX_MS, unit="ms"),
    Setting("tony.other.namenodes", "other_namenodes", "names", "secure YARN: NameNodes besides "
            "the default FS that the job needs delegation tokens for"),
    # --- tony.<type>.KEY, for each task type ------------------------------------------------
    Setting("instances", "instances", "whole", "tasks of this type (--workers, --ps, ...)",
            scope="task"),
    Setting("memory", "memory_mb", "memory", "memory per task of this type, e.g. 2g "
            "(--memory)", scope="task"),
    Setting("vcores", "vcores", "whole", "vcores per task of this type (--vcores)",
            scope="task", minimum=1),
    Setting("gpus", "gpus", "whole", "GPUs per task of this type (--gpus)", scope="task"),
    Setting("node-label", "node_label", "text", "YARN: the node label of this type's tasks",
            scope="task"),
)
# fmt: on

FLAGS = tuple(s for s in SETTINGS if s.is_flag and s.scope != "session")
SESSION_FLAGS = tuple(s for s in SETTINGS if s.is_flag and s.scope == "session")
JOB_KEYS = {s.name: s for s in SETTINGS if s.name.startswith("tony.")}
PER_TYPE = {s.name: s for s in SETTINGS if not s.is_flag and not s.name.startswith("tony.")}
