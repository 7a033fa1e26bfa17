"""The ``tony-jupyter`` command: list, status, logs, kill, submit, devcluster."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from . import commands
from .bundle import Bundle
from .errors import TonyError

USAGE = """\
usage: tony-jupyter list
       tony-jupyter status JOB
       tony-jupyter logs JOB [TASK]
       tony-jupyter kill JOB
       tony-jupyter doctor [--python PATH] [--queue NAME] [--no-probe]
       tony-jupyter submit SCRIPT [job flags, as for %%tony] [-- script args]
       tony-jupyter devcluster {up,down,status,env,logs} ...
"""


def submit(words: list[str]) -> int:
    from .bundle import check_syntax
    from .job import TonyJob
    from .job import submit as submit_job
    from .options import parse_job_args, src_dir
    from .protocol import JobState
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
    try:
        if cmd == "devcluster":
            from .devcluster.cli import main as devcluster_main

            return devcluster_main(rest)
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
