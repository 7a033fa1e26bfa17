"""The job flags shared by ``%%tony``, ``%tony run`` and ``tony-jupyter submit``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys

from . import numbers
from .errors import SpecError
from .frameworks import MAX_PROCS_PER_TASK, NAMES, PROCS_ABOVE, missing_modules, parse_framework
from .numbers import parse_memory
from .spec import JobSpec, SpecBuilder
from .srcdir import SrcDir, collect


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting the kernel."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments"):
            message += "; `%tony help` lists the flags"
        raise SpecError(f"%%tony: {message}")

    def exit(self, status: int = 0, message: str | None = None):
        raise SpecError(message or f"%%tony: exit {status}")


def _count(flag: str):
    def parse(value: str) -> int:
        try:
            return numbers.whole(value, flag)
        except SpecError as e:  # argparse names the flag itself
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ")) from None

    return parse


def _procs(value: str) -> int:
    """--procs-per-task's count, at most MAX_PROCS_PER_TASK (what the message says to do)."""
    n = _count("--procs-per-task")(value)
    if n > MAX_PROCS_PER_TASK:
        raise argparse.ArgumentTypeError(
            PROCS_ABOVE.format(procs=n).removeprefix("--procs-per-task ")
        )
    return n


def _seconds(flag: str):
    def parse(value: str) -> float:
        try:
            return numbers.seconds(value, flag)
        except SpecError as e:  # argparse names the flag itself
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ")) from None

    return parse


def _workers(value: str) -> int | tuple[int, int]:
    """--workers N, or MIN:MAX (an elastic range)."""
    if ":" not in value:
        return _count("--workers")(value)
    low, _, high = value.partition(":")
    try:
        lo, hi = numbers.whole(low, "--workers MIN"), numbers.whole(high, "--workers MAX")
    except SpecError as e:
        why = str(e).removeprefix("--workers ")
        msg = "--workers takes N or MIN:MAX (whole numbers, e.g. 2:4), "
        msg += f"not {numbers.shown(value)} ({why})"
        raise argparse.ArgumentTypeError(msg) from None
    if lo < 1 or hi < 1:
        raise argparse.ArgumentTypeError(f"--workers {value}: MIN and MAX must be at least 1")
    if lo > hi:
        raise argparse.ArgumentTypeError(
            f"--workers {value}: MIN ({lo}) is above MAX ({hi}); write --workers {hi}:{lo}"
        )
    return (lo, hi)


def job_parser(prog: str = "%%tony") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        add_help=False,
        allow_abbrev=False,
        description="Run the cell as a distributed TensorFlow, PyTorch or JAX job.",
    )
    p.add_argument(
        "--workers",
        type=_workers,
        metavar="N|MIN:MAX",
        default=None,
        help="number of worker tasks (default 1 when no --chief); PyTorch: MIN:MAX for an "
        "elastic job (torchrun's --nnodes MIN:MAX), where a lost worker is replaced",
    )
    p.add_argument(
        "--framework",
        default=None,
        metavar="NAME",
        help="tensorflow (default), pytorch or jax: the environment each task gets "
        "(tony.application.framework)",
    )
    p.add_argument(
        "--procs-per-task",
        type=_procs,
        default=None,
        metavar="N",
        help="PyTorch: processes per task, each with its own LOCAL_RANK (torchrun's "
        "--nproc-per-node); at most --gpus when the tasks have GPUs",
    )
    p.add_argument(
        "--ps", type=_count("--ps"), default=0, metavar="N", help="number of parameter servers"
    )
    p.add_argument("--chief", action="store_true", help="add a chief task")
    p.add_argument("--evaluator", action="store_true", help="add an evaluator task")
    p.add_argument(
        "--memory", metavar="SIZE", help="memory per task, e.g. 2g (tony.<type>.memory per type)"
    )
    p.add_argument("--vcores", type=_count("--vcores"), metavar="N", help="vcores per task")
    p.add_argument("--gpus", type=_count("--gpus"), metavar="N", help="GPUs per chief/worker task")
    p.add_argument(
        "--pull", default="", metavar="NAME[,NAME]", help="names to bring back from the chief: a,b"
    )
    p.add_argument(
        "--shard",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="split these DataFrames/Tables/arrays by rows: each chief/worker task gets its own "
        "rows (staged as Parquet)",
    )
    p.add_argument("--name", default=None, metavar="NAME", help="job name")
    p.add_argument(
        "--max-attempts",
        type=_count("--max-attempts"),
        default=None,
        metavar="N",
        help="attempts of the whole job before it fails (default 1; tony.application.num-retries "
        "+ 1)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds("--timeout"),
        default=None,
        metavar="S",
        help="seconds before the job fails",
    )
    p.add_argument("--async", dest="async_", action="store_true", help="return at once")
    p.add_argument(
        "--backend",
        choices=("local", "yarn"),
        default=None,
        help="where the tasks run (default: yarn when HADOOP_CONF_DIR is set, else local)",
    )
    p.add_argument("--queue", default=None, metavar="NAME", help="YARN queue")
    p.add_argument(
        "--node-label", default=None, metavar="LABEL", help="YARN node label for every task"
    )
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="YARN: the Python executable on the cluster's nodes (default: this kernel's)",
    )
    p.add_argument(
        "--pack-env",
        nargs="?",
        const="",
        default=None,
        metavar="VENV",
        help="YARN: pack this venv (default: the kernel's, sys.prefix), upload it once per "
        "content hash and run the job in it instead of a Python already on the nodes; "
        "needs venv-pack; venvs only, not conda",
    )
    p.add_argument(
        "--principal",
        default=None,
        metavar="PRINCIPAL",
        help="YARN with Kerberos: log in as this principal (with --keytab; default: the "
        "ticket cache's, after kinit)",
    )
    p.add_argument(
        "--keytab",
        default=None,
        metavar="PATH",
        help="YARN with Kerberos: the principal's keytab; tokens are then renewed past their "
        "maximum lifetime",
    )
    p.add_argument(
        "--keep-staging",
        action="store_true",
        help="YARN: keep the job's HDFS staging directory (with the AM's logs) after it ends",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a TonY configuration key, e.g. tony.ps.memory=1g",
    )
    p.add_argument(
        "--conf-file", action="append", default=[], metavar="PATH", help="TonY's tony.xml"
    )
    p.add_argument(
        "--keras3",
        action="store_true",
        help="don't set TF_USE_LEGACY_KERAS=1 in the tasks (same as "
        "--conf tony.keras.legacy=false)",
    )
    p.add_argument(
        "--src-dir",
        default=None,
        metavar="DIR",
        help="ship DIR with the job (default: the script's directory for %%tony run, the "
        "notebook's working directory for a cell); tasks import from it and run in it",
    )
    p.add_argument(
        "--no-src-dir",
        dest="ship_src",
        action="store_false",
        help="ship no directory with the job",
    )
    p.add_argument(
        "--src-follow-links",
        action="store_true",
        help="ship what links that lead out of the shipped directory point at (left out by "
        "default; pseudo-files and special files never are)",
    )
    p.add_argument(
        "--no-tensorboard",
        dest="tensorboard",
        action="store_false",
        help="don't start TensorBoard beside the chief",
    )
    return p


def src_dir(args: argparse.Namespace, script: str | None = None) -> SrcDir | None:
    """The directory shipped with the job (srcdir.py): checked and hashed here, before
    anything is submitted."""
    if not args.ship_src:
        if args.src_dir is not None or args.src_follow_links:
            flag = "--src-dir" if args.src_dir is not None else "--src-follow-links"
            raise SpecError(f"{flag} and --no-src-dir contradict each other; keep one")
        return None
    from .launcher.client import home

    chosen = args.src_dir or (os.path.dirname(os.path.abspath(script)) if script else os.getcwd())
    src = collect(os.path.expanduser(chosen), exclude=(home(),), follow_links=args.src_follow_links)
    if src.notice and src.notice not in _reported:  # said once, not at every cell
        _reported.add(src.notice)
        print(src.notice, file=sys.stderr)
    return src


def default_backend() -> str:
    return "yarn" if os.environ.get("HADOOP_CONF_DIR") else "local"


def parse_job_args(line: str, prog: str = "%%tony") -> tuple[argparse.Namespace, JobSpec]:
    try:
        argv = shlex.split(line)
    except ValueError as e:
        raise SpecError(f"{prog}: cannot split the flags: {e}") from None
    args = job_parser(prog).parse_args(argv)
    return args, spec_from_args(args)


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    b = SpecBuilder(name=args.name or "tony-job", backend=args.backend or default_backend())
    if args.memory is not None:
        b.default_memory = parse_memory(args.memory)
    if args.vcores is not None:
        if args.vcores < 1:
            raise SpecError("--vcores must be at least 1")
        b.default_vcores = args.vcores
    if args.gpus is not None:
        b.default_gpus = args.gpus
    if args.node_label:
        b.default_node_label = args.node_label
    for path in args.conf_file:
        b.apply_conf_file(path)
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"--conf {item!r}: expected KEY=VALUE, e.g. tony.ps.memory=1g")
        b.apply_conf(key, value)
    if args.framework is not None:
        b.job["framework"] = parse_framework(args.framework)
    if args.procs_per_task is not None:
        b.job["procs_per_task"] = args.procs_per_task
    if isinstance(args.workers, tuple):
        low, high = args.workers
        if low != high:  # elastic (checked with the framework: frameworks.check_elastic)
            b.job["min_workers"] = low
        args.workers = high
    if args.workers is not None:
        if args.workers == 0 and not args.chief and not b.instances.get("chief"):
            raise SpecError(
                "--workers 0: a job needs at least one worker (or --chief); use --workers 1 or more"
            )
        b.instances["worker"] = args.workers
    elif not args.chief and "worker" not in b.instances:
        b.instances["worker"] = 1
    if args.chief:
        b.instances["chief"] = 1
    if args.ps:
        b.instances["ps"] = args.ps
    if args.evaluator:
        b.instances["evaluator"] = 1
    if args.queue:
        b.job["queue"] = args.queue
    if args.max_attempts is not None:
        if args.max_attempts < 1:
            raise SpecError("--max-attempts must be at least 1")
        b.job["max_attempts"] = args.max_attempts
    if args.timeout is not None:
        if not 0 < args.timeout < float("inf"):  # also nan
            raise SpecError(f"--timeout must be a positive number of seconds, not {args.timeout}")
        b.job["timeout_s"] = args.timeout
    if args.keras3:
        b.job["legacy_keras"] = False
    if not getattr(args, "tensorboard", True):
        b.job["tensorboard"] = False
    if args.python:
        b.job["python"] = args.python
    if getattr(args, "pack_env", None) is not None:
        if args.python:
            raise SpecError("--pack-env and --python exclude each other: the job runs its env")
        if b.backend != "yarn":
            raise SpecError("--pack-env is for the YARN backend (--backend yarn)")
        from .launcher.yarn.packenv import venv_root

        b.job["pack_env"] = str(venv_root(args.pack_env))
    if args.keep_staging:
        b.job["keep_staging"] = True
    for flag in ("principal", "keytab"):
        if getattr(args, flag, None):
            b.job[flag] = getattr(args, flag)
    b.pull = tuple(n.strip() for n in args.pull.split(",") if n.strip())
    bad = [n for n in b.pull if not n.isidentifier()]
    if bad:
        raise SpecError(f"--pull: {', '.join(map(repr, bad))} is not a Python name; use --pull a,b")
    spec = b.build()
    check_framework_installed(spec)
    check_keras(spec)
    report_not_applicable(b.not_applicable)
    return spec


def check_framework_installed(spec: JobSpec) -> None:
    """A PyTorch or JAX job whose tasks run this kernel's Python (the local backend, YARN
    without --python, or a pack of this venv) needs the framework here: checked before
    anything is submitted, so the job does not fail in every task once started."""
    here = os.path.realpath(sys.prefix)
    if spec.python or (spec.pack_env and os.path.realpath(spec.pack_env) != here):
        return  # another environment: only the tasks can tell
    missing, pip_name = missing_modules(spec.framework, importlib.util.find_spec)
    if missing:
        name = NAMES[spec.framework]
        raise SpecError(
            f"--framework {spec.framework}: {', '.join(missing)} is not installed in this "
            f"kernel's environment ({sys.prefix}), which the tasks run: `pip install {pip_name}` "
            f"there (or `pip install 'tony-jupyter[frameworks]'`), or run the job in an "
            f"environment that has {name} (--python on YARN)"
        )


def check_keras(spec: JobSpec) -> None:
    """Tasks run tf.keras as Keras 2 (TF_USE_LEGACY_KERAS=1), which needs the tf-keras package:
    without it, `import tensorflow` would fail inside every task once the job has started.
    The tasks run this kernel's Python (or a pack of its venv), so its absence here is theirs."""
    if spec.framework != "tensorflow":
        return  # tf.keras is TensorFlow's; a PyTorch or JAX job's Keras is its own business
    if spec.legacy_keras and importlib.util.find_spec("tf_keras") is None:
        raise SpecError(
            "tf-keras is not installed, and the tasks run tf.keras as Keras 2 "
            "(TF_USE_LEGACY_KERAS=1), as TensorFlow's multi-worker tutorials need: "
            "`pip install tf-keras` (the version of your TensorFlow), or pass --keras3 "
            "(tony.keras.legacy=false) to run Keras 3"
        )


_reported: set[str] = set()


def report_not_applicable(keys: dict[str, str]) -> None:
    """TonY keys accepted but not acted on: said once per key in this process (a tony.xml used
    cell after cell does not repeat it)."""
    for key, why in keys.items():
        if key not in _reported:
            _reported.add(key)
            print(f"tony-jupyter: {key} does not apply here ({why}); ignored", file=sys.stderr)
