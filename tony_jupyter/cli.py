"""The ``tony-jupyter`` command: list, status, logs, kill, submit, devcluster."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from . import commands
from .core.bundle import Bundle
from .core.errors import TonyError

# The subcommands: (name, arguments, what it does). The usage text and the docs' CLI reference
# are made from this table; main() dispatches each name.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("list", "", "every job: this host's records, the HDFS history and the RM's running ones"),
    ("status", "JOB", "a job's state, attempts, tasks and endpoints"),
    ("logs", "JOB [TASK]", "a task's stdout/stderr (every task's without TASK)"),
    ("stacks", "JOB [TASK]", "every running task's Python stacks (all threads), grouped"),
    ("kill", "JOB", "kill a job"),
    (
        "doctor",
        "[--python PATH] [--queue NAME] [--pack-env [VENV]] [--ship-python WHEN] [--no-probe]",
        "check what a first job needs",
    ),
    (
        "submit",
        "SCRIPT [job flags, as for %%tony] [-- script args]",
        "run a script as a job and follow it here",
    ),
    (
        "devcluster",
        "SUBCOMMAND ...",
        "a real Hadoop (HDFS + YARN) on this machine: tony-jupyter devcluster --help",
    ),
)
USAGE = "".join(
    f"{'usage:' if i == 0 else '      '} tony-jupyter {name} {args}".rstrip() + "\n"
    for i, (name, args, _) in enumerate(COMMANDS)
)
NAMES = tuple(name for name, _, _ in COMMANDS)
# Commands that another distribution brings, found through this entry point group so that this
# package never imports them: `devcluster` (tony-jupyter-devcluster), with what installs it.
PLUGIN_GROUP = "tony_jupyter.commands"
PLUGINS = {"devcluster": ("tony-jupyter-devcluster", "pip install 'tony-jupyter[devcluster]'")}


def plugin(name: str) -> Callable[[list[str]], int] | None:
    """The ``main(argv)`` that an installed distribution registers as command ``name``."""
    found = entry_points(group=PLUGIN_GROUP, name=name)
    return next(iter(found)).load() if found else None


def run_plugin(name: str, argv: list[str]) -> int:
    command = plugin(name)
    if command is None:
        dist, install = PLUGINS[name]
        print(
            f"error: `tony-jupyter {name}` comes with {dist}, which is not installed here: "
            f"{install} (in a checkout of tony-jupyter: bash dev/setup)",
            file=sys.stderr,
        )
        return 2
    return command(argv)


def submit(words: list[str]) -> int:
    from .core.bundle import check_syntax
    from .core.protocol import JobState
    from .job import TonyJob
    from .job import submit as submit_job
    from .options import parse_job_args, src_dir
    from .widgets import JobView, follow

    if not words:
        raise TonyError("submit needs a script: tony-jupyter submit SCRIPT [flags]")
    script, rest = Path(words[0]), words[1:]
    script_args: list[str] = []
    if "--" in rest:
        i = rest.index("--")
        rest, script_args = rest[:i], rest[i + 1 :]
    if not script.is_file():
        raise TonyError(f"no such script {str(script)!r}")
    args, spec = parse_job_args(shlex.join(rest), prog="tony-jupyter submit")
    if args.shard:
        raise TonyError("--shard takes notebook names; a submitted script has none to split")
    source = script.read_text()
    check_syntax(source, str(script))
    import cloudpickle

    src = src_dir(args, str(script))
    bundle = Bundle(source, cloudpickle.dumps({}), (), str(script.resolve()), src=src)
    job = TonyJob(submit_job(spec, bundle, [str(script), *script_args]))
    print(f"submitted {job.job_id}")
    if args.async_:
        return 0
    view = JobView(job.job_id)
    view.display()
    try:
        snap = follow(job.client, view)
    except KeyboardInterrupt:
        snap = job.kill("interrupted (Ctrl-C)")
    job.client.release()
    commands.show(f"job {job.job_id}: {snap.state}" + (f" ({snap.reason})" if snap.reason else ""))
    return 0 if snap.state == JobState.SUCCEEDED else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in NAMES:
        print(f"error: unknown command {cmd!r}; try {', '.join(NAMES)}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        if cmd in PLUGINS:
            return run_plugin(cmd, rest)
        if cmd == "submit":
            return submit(rest)
        if cmd == "doctor":
            from .launcher.doctor import doctor

            report, ok = doctor(rest)
            commands.show(report)
            return 0 if ok else 1
        commands.dispatch(cmd, rest)
        return 0
    except TonyError as e:
        commands.show(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1


if __name__ == "__main__":
    sys.exit(main())
