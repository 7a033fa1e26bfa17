"""The job flags shared by ``%%tony``, ``%tony run`` and ``tony-jupyter submit``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from .core import numbers
from .core.errors import SpecError
from .core.frameworks import (
    MAX_PROCS_PER_TASK,
    NAMES,
    PROCS_ABOVE,
    missing_modules,
    parse_framework,
)
from .core.numbers import parse_memory
from .core.settings import FLAGS, SESSION_FLAGS, Setting
from .core.spec import JobSpec, SpecBuilder
from .core.srcdir import SrcDir, collect
from .core.venvdir import venv_root


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting the kernel."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments"):
            message += "; `%tony help` lists the flags"
        raise SpecError(f"%%tony: {message}")

    def exit(self, status: int = 0, message: str | None = None):
        raise SpecError(message or f"%%tony: exit {status}")


def _argtype(read, flag: str):
    """An argparse ``type`` for ``flag`` from one of numbers.py's readers: its message without
    the flag's name (argparse names the flag itself)."""

    def parse(value: str):
        try:
            return read(value, flag)
        except SpecError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ")) from None

    return parse


def _count(flag: str):
    return _argtype(numbers.whole, flag)


def _procs(value: str) -> int:
    """--procs-per-task's count, at most MAX_PROCS_PER_TASK (what the message says to do)."""
    n = _count("--procs-per-task")(value)
    if n > MAX_PROCS_PER_TASK:
        raise argparse.ArgumentTypeError(
            PROCS_ABOVE.format(procs=n).removeprefix("--procs-per-task ")
        )
    return n


def _seconds(flag: str):
    return _argtype(numbers.seconds, flag)


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


def _argparse(s: Setting) -> dict[str, Any]:
    """What argparse needs for a row of settings.py's table."""
    kw: dict[str, Any] = {"help": s.help}
    if s.metavar:
        kw["metavar"] = s.metavar
    if s.dest:
        kw["dest"] = s.dest
    if s.kind in ("switch", "off"):
        kw["action"] = "store_true" if s.kind == "switch" else "store_false"
        return kw
    kw["default"] = [] if s.kind == "append" else s.default
    if s.kind == "append":
        kw["action"] = "append"
    elif s.kind == "optional":
        kw.update(nargs="?", const="")
    elif s.kind == "choice":
        kw["choices"] = s.choices
    elif s.kind in _TYPES:
        kw["type"] = _TYPES[s.kind](s.name)
    return kw


_TYPES: dict[str, Callable[[str], Callable[[str], Any]]] = {
    "whole": _count,
    "seconds": _seconds,
    "workers": lambda name: _workers,
    "procs": lambda name: _procs,
}


def job_parser(prog: str = "%%tony") -> argparse.ArgumentParser:
    """The job flags: a row of settings.FLAGS each."""
    p = _Parser(
        prog=prog,
        add_help=False,
        allow_abbrev=False,
        description="Run the cell as a distributed TensorFlow, PyTorch or JAX job.",
    )
    for s in FLAGS:
        p.add_argument(s.name, **_argparse(s))
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


def _given(s: Setting, value: object) -> bool:
    if s.kind == "switch":
        return value is True
    if s.kind == "off":
        return value is False
    return value is not None and (value != "" or s.kind == "framework")


def _checked(s: Setting, value: Any) -> Any:
    """A flag's value within its row's bounds (memory: read as a size)."""
    if s.kind == "memory":
        return parse_memory(value)
    if s.kind == "framework":
        return parse_framework(value)
    if s.kind == "whole" and value < s.minimum:
        raise SpecError(f"{s.name} must be at least {s.minimum}")
    if s.kind == "seconds" and not 0 < value < float("inf"):  # also nan
        raise SpecError(f"{s.name} must be a positive number of seconds, not {value}")
    return value


# The builder's default for every task, per TaskSpec field (the flags of scope task).
_TASK_DEFAULTS = {
    "memory_mb": "default_memory",
    "vcores": "default_vcores",
    "gpus": "default_gpus",
    "node_label": "default_node_label",
}


def session_flags(words: list[str]) -> tuple[str, float | None, bool]:
    """%tony session start's own flags (settings.SESSION_FLAGS), and the job flags left."""
    p = _Parser(prog="%tony session start", add_help=False, allow_abbrev=False)
    for s in SESSION_FLAGS:
        p.add_argument(s.name, **_argparse(s))
    args, rest = p.parse_known_args(words)
    return shlex.join(rest), args.idle_timeout, args.detach


def _apply_flags(b: SpecBuilder, args: argparse.Namespace, how: str) -> None:
    """Each given flag whose row says ``how``: set, or task (every task's default)."""
    for s in FLAGS:
        value = getattr(args, s.dest or s.name[2:].replace("-", "_"), None)
        if s.how != how or not _given(s, value):
            continue
        value = s.value if s.kind in ("switch", "off") else _checked(s, value)
        if how == "task":
            setattr(b, _TASK_DEFAULTS[s.field], value)
        else:
            b.set(s.field, value)


def _apply_conf(b: SpecBuilder, args: argparse.Namespace) -> None:
    for path in args.conf_file:
        b.apply_conf_file(path)
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"--conf {item!r}: expected KEY=VALUE, e.g. tony.ps.memory=1g")
        b.apply_conf(key, value)


def _apply_tasks(b: SpecBuilder, args: argparse.Namespace) -> None:
    """--workers (N or MIN:MAX), --chief, --ps, --evaluator."""
    if isinstance(args.workers, tuple):
        low, high = args.workers
        if low != high:  # elastic (checked with the framework: frameworks.check_elastic)
            b.set("min_workers", low)
        args.workers = high
    if args.workers is not None:
        if args.workers == 0 and not args.chief and not b.instances.get("chief"):
            raise SpecError(
                "--workers 0: a job needs at least one worker (or --chief); use --workers 1 or more"
            )
        b.instances["worker"] = args.workers
    elif not args.chief and "worker" not in b.instances:
        b.instances["worker"] = 1
    for type_, n in (("chief", int(args.chief)), ("ps", args.ps), ("evaluator", args.evaluator)):
        if n:
            b.instances[type_] = int(n)


def _apply_pack_env(b: SpecBuilder, args: argparse.Namespace) -> None:
    if getattr(args, "pack_env", None) is None:
        return
    if args.python:
        raise SpecError("--pack-env and --python exclude each other: the job runs its env")
    if b.backend != "yarn":
        raise SpecError("--pack-env is for the YARN backend (--backend yarn)")
    b.set("pack_env", str(venv_root(args.pack_env)))


def _pull(args: argparse.Namespace) -> tuple[str, ...]:
    pull = tuple(n.strip() for n in args.pull.split(",") if n.strip())
    bad = [n for n in pull if not n.isidentifier()]
    if bad:
        raise SpecError(f"--pull: {', '.join(map(repr, bad))} is not a Python name; use --pull a,b")
    return pull


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    """The spec the flags ask for: every task's defaults, then TonY's keys, then the flags
    that set a field of the job (settings.py's table says which), which win over the keys."""
    b = SpecBuilder(name=args.name or "tony-job", backend=args.backend or default_backend())
    _apply_flags(b, args, "task")
    _apply_conf(b, args)
    _apply_flags(b, args, "set")
    _apply_tasks(b, args)
    _apply_pack_env(b, args)
    b.pull = _pull(args)
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
