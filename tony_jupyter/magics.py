"""``%%tony`` (run the cell as a distributed job) and ``%tony`` (list, status, logs, kill,
attach, run). Bad input raises UsageError before anything is submitted."""

from __future__ import annotations

import dataclasses
import shlex
import threading
import time
from pathlib import Path

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.utils.text import DollarFormatter

from . import commands
from .core import origin, shards
from .core.bundle import Bundle, make_bundle
from .core.errors import BundleError, JobNotFoundError, SpecError
from .core.settings import SESSION_FLAGS as _SESSION_SETTINGS
from .core.spec import JobSpec
from .job import TonyJob, submit
from .launcher import localwarm as spare_am
from .launcher.joblist import open_job
from .launcher.pickclient import open_client
from .options import default_backend, job_parser, parse_job_args, session_flags, src_dir

# %tony's subcommands: (name, arguments, what it does). HELP and the docs are made from this
# table; TonyMagics.tony dispatches each name.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("run", "SCRIPT [flags] [-- script args]", "a script instead of a cell, as a job"),
    ("list", "", "every job, also those of kernels that have died"),
    ("status", "ID", "a job's state, attempts, tasks and endpoints"),
    ("logs", "ID [TASK]", "a task's stdout/stderr"),
    ("stacks", "ID [TASK]", "every running task's Python stacks (all threads), grouped"),
    ("kill", "ID", "kill a job"),
    ("attach", "ID", "the live widget of a job again"),
    (
        "result",
        "ID",
        "a job's last expression, its --pull names into the notebook (waits for its end; "
        "also from a kernel that did not submit it)",
    ),
    ("session", "start|status|stop|restart [flags]", "a warm cluster that runs cell after cell"),
    (
        "doctor",
        "[--python PATH] [--queue NAME] [--pack-env [VENV]] [--ship-python WHEN] [--no-probe]",
        "check what a first job needs",
    ),
    ("help", "", "this text and the job flags"),
)
NAMES = tuple(name for name, _, _ in COMMANDS)
# %tony session start's own flags, besides the job flags: (flag, metavar, what it does).
SESSION_FLAGS: tuple[tuple[str, str, str], ...] = tuple(
    (s.name, s.metavar, s.help + (f" (default {getattr(JobSpec, s.field):g})" if s.field else ""))
    for s in _SESSION_SETTINGS
)
HELP = "".join(
    f"{usage}\n    {what}\n"
    for usage, what in [
        ("%%tony [flags]", "run the cell as a distributed TensorFlow, PyTorch or JAX job"),
        *((f"%tony {name} {args}".rstrip(), what) for name, args, what in COMMANDS),
        *((f"%tony session start {f} {meta}".rstrip(), what) for f, meta, what in SESSION_FLAGS),
    ]
)


# How long an interrupt waits for the shutdown request that follows it when the kernel is
# restarted or shut down (jupyter_client interrupts first, then asks to shut down: ms apart).
SHUTDOWN_WAIT = 1.0


def shutting_down(shell, wait: float) -> bool:
    """Whether this interrupt is a kernel restart's or shutdown's rather than the user's:
    ipykernel's shutdown handler (on its control thread) sets ``shell.exit_now``. A job
    outlives its kernel; only the user's Ctrl-C kills it."""
    deadline = time.monotonic() + wait
    while not getattr(shell, "exit_now", False):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _in_kernel() -> bool:
    try:
        from ipykernel.kernelbase import Kernel

        return Kernel.initialized()
    except ImportError:
        return False


def _wait_processing_ui(thread: threading.Thread) -> None:
    """Block like a normal cell, but let widget events (the Kill button) through.

    It sleeps between looks rather than ``thread.join(timeout)``: a Ctrl-C that lands inside
    ``join`` makes CPython mark the still-running thread stopped (threading's bpo-45274 path),
    and the interrupted cell would then not wait for its follower to see the kill through."""
    if not _in_kernel():
        while thread.is_alive():
            time.sleep(0.05)
        return
    from jupyter_ui_poll import ui_events

    with ui_events() as poll:
        while thread.is_alive():
            poll(20)
            time.sleep(0.05)


def start_spares() -> None:
    """As the extension loads: the first local job's spare AM, started in the background
    (launcher/localwarm.py; ``TONY_JUPYTER_WARM_ON_LOAD=0`` turns it off)."""
    if default_backend() == "local":
        spare_am.on_load()


@magics_class
class TonyMagics(Magics):
    shell: InteractiveShell  # set by IPython when the extension loads

    @no_var_expand
    @line_cell_magic
    def tony(self, line: str, cell: str | None = None):
        if cell is not None:
            return self._run(line, cell, filename=None, argv=None)
        try:
            words = shlex.split(self._expand(line))
        except ValueError as e:  # an unclosed quote
            raise UsageError(f"%tony: cannot split {line!r}: {e}") from None
        if not words or words[0] in ("help", "-h", "--help"):
            print(HELP + job_parser().format_help())
            return None
        cmd, rest = words[0], words[1:]
        if cmd not in NAMES:
            raise UsageError(f"unknown command {cmd!r}; try {', '.join(NAMES)}")
        if cmd == "run":
            return self._run_script(rest)
        if cmd == "session":
            return self._session(rest)
        try:
            if cmd == "attach":
                return self._attach(rest)
            if cmd == "result":
                return self._result(rest)
            return commands.dispatch(cmd, rest)
        except (JobNotFoundError, SpecError) as e:
            raise UsageError(str(e)) from None

    def _expand(self, line: str) -> str:
        """``$name`` and ``{expr}`` from the notebook's namespace, as IPython expands every line
        magic's arguments (this one is also a cell magic, whose line is left as written). An
        expression that fails leaves the line as it is, as IPython does."""
        if self.shell is None:
            return line
        try:  # the user's namespace only: none of this method's locals
            return DollarFormatter().vformat(line, args=[], kwargs=self.shell.user_ns)
        except Exception:  # noqa: BLE001 - IPython's own rule: a line that fails stays as written
            return line

    def _run_script(self, words: list[str]):
        if not words:
            raise UsageError("%tony run SCRIPT [flags] [-- script args]: name a script")
        script, rest = words[0], words[1:]
        script_args: list[str] = []
        if "--" in rest:
            i = rest.index("--")
            rest, script_args = rest[:i], rest[i + 1 :]
        path = Path(script).expanduser()
        if not path.is_file():
            raise UsageError(f"%tony run: no such script {script!r}")
        return self._run(
            shlex.join(rest),
            path.read_text(),
            filename=str(path.resolve()),
            argv=[str(path), *script_args],
        )

    def _session(self, words: list[str]):
        from . import session as sessions

        sub, rest = (words[0], words[1:]) if words else ("status", [])
        current = sessions.current()
        try:
            if sub == "start":
                if current is not None and current.job is not None:
                    raise SpecError("a session is already running; %tony session stop first")
                line, idle, detach = session_flags(rest)
                args, spec = parse_job_args(line)
                spec = sessions.session_spec(spec, idle)
                new = sessions.Session(spec, line, detach, src=src_dir(args))
                new.start()
                sessions.set_current(new)
                commands.show(new.describe())
            elif sub == "status":
                none = "no session; %tony session start --workers N"
                commands.show(current.describe() if current else none)
            elif sub == "stop":
                if current is None:
                    raise SpecError("no session is running")
                snap = current.stop()
                sessions.set_current(None)
                print(f"session {snap.job_id if snap else ''} stopped")
            elif sub == "restart":
                if current is None:
                    raise SpecError("no session to restart; %tony session start --workers N")
                current.restart()
                commands.show(current.describe())
            else:
                raise SpecError(f"unknown session command {sub!r}: start, status, stop, restart")
        except (SpecError, BundleError, sessions.SessionError) as e:
            raise UsageError(str(e)) from None

    def _run_in_session(self, session, args, spec, source: str):
        from .session import SessionError
        from .widgets import JobView

        if args.async_ or args.shard:
            raise UsageError(
                "--async and --shard are not available inside a session; "
                "%tony session stop to run a one-shot job"
            )
        if _asks_for_resources(args) and not session.matches(spec):
            raise UsageError(
                "this cell asks for other tasks or resources than the running "
                "session; drop the resource flags, or %tony session stop first"
            )
        view = JobView(session.job.job_id if session.job else "session")
        view.display()
        try:
            return session.run(source, self.shell.user_ns, spec.pull, view)
        except (SessionError, BundleError) as e:
            raise UsageError(str(e)) from None

    def _run(self, line: str, source: str, filename: str | None, argv: list[str] | None):
        from .session import current as current_session

        try:
            args, spec = parse_job_args(line)
            if filename is None and current_session() is not None:
                return self._run_in_session(current_session(), args, spec, source)
            if filename is None:
                sharded = shards.parse_names(args.shard)
                bundle = make_bundle(source, self.shell.user_ns, exclude=sharded)
                plan = shards.plan(sharded, self.shell.user_ns, spec)
                bundle = dataclasses.replace(bundle, shards=plan, src=src_dir(args))
            elif args.shard:
                raise SpecError("--shard takes notebook names; a script has none to split")
            else:  # a script brings nothing from the notebook
                bundle = make_bundle(source, {}, ())
                src = src_dir(args, filename)
                bundle = Bundle(bundle.source, bundle.names, (), filename, src=src)
        except (SpecError, BundleError) as e:
            raise UsageError(str(e)) from None
        try:
            record = submit(spec, bundle, argv)
        except SpecError as e:  # the cluster says no (queue, label, sizes): still bad input
            raise UsageError(str(e)) from None
        # The cell it came from: a reopened notebook finds its job again (server_ext/cells.py).
        record.write_origin(origin.here())
        job, follower = None, None
        try:  # from the job's submission: its tasks may be running before its view is shown
            job = TonyJob(record, namespace=self.shell.user_ns)
            view = _view(job)
            if args.async_:
                threading.Thread(target=_follow, args=(job, view), daemon=True).start()
                return job
            follower = threading.Thread(target=_follow, args=(job, view), daemon=True)
            follower.start()
            _wait_processing_ui(follower)
        except KeyboardInterrupt:
            job = job or TonyJob(record, namespace=self.shell.user_ns)
            if shutting_down(self.shell, SHUTDOWN_WAIT if _in_kernel() else 0.0):
                commands.show(
                    f"[tony] the kernel is shutting down; job {job.job_id} goes on (a new "
                    f"kernel shows it in this cell again; %tony result {job.job_id} collects it)"
                )
                raise
            snap = job.kill("interrupted in the notebook (Ctrl-C)")
            job.set_final(snap)
            if follower is not None:
                follower.join(5)
            raise
        return job.result()

    def _attach(self, words: list[str]):
        if not words:
            raise UsageError("%tony attach ID: name the job (see %tony list)")
        job = TonyJob(open_job(words[0]), namespace=self.shell.user_ns)
        view = _view(job)
        threading.Thread(target=_follow, args=(job, view), daemon=True).start()
        return None

    def _result(self, words: list[str]):
        """What the job's cell would have returned, loaded here: its --pull names into the
        namespace, its last expression as this cell's value. A job still running is waited
        for (Ctrl-C stops the waiting, not the job)."""
        if len(words) != 1:
            raise UsageError("%tony result ID: name one job (see %tony list)")
        return TonyJob(open_job(words[0]), namespace=self.shell.user_ns).result()


def _asks_for_resources(args) -> bool:
    return any(
        [
            args.workers is not None,
            args.ps,
            args.chief,
            args.evaluator,
            args.memory,
            args.vcores is not None,
            args.gpus is not None,
            args.conf,
            args.conf_file,
            args.backend,
            args.queue,
            args.node_label,
        ]
    )


def _view(job: TonyJob):
    from .widgets import JobView

    view = JobView(
        job.job_id,
        on_kill=lambda: job.client.kill("killed from the widget"),
        on_stacks=lambda: commands.client_stacks_text(job.client),
    )
    view.display()
    return view


def _follow(job: TonyJob, view) -> None:
    from .widgets import follow

    stop = job.done
    try:
        snap = follow(job.client, view, stop=stop)
    except Exception as e:  # noqa: BLE001 - never leave the cell waiting on a dead follower
        # The view failed, not the job: it goes on, and its end (its value) is still waited
        # for, without the view.
        commands.show(
            f"[tony] the view of {job.job_id} failed ({e}); waiting for the job without it"
        )
        try:
            snap = job.wait()
        except Exception as again:  # noqa: BLE001
            snap = open_client(job.record).snapshot()
            commands.show(f"[tony] lost track of {job.job_id}: {again}")
    if snap.terminal:
        job.set_final(snap)
    else:
        job.done.set()
