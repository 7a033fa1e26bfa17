"""One base class for the library's errors; each kind of failure has its own class."""

from __future__ import annotations


class TonyError(Exception):
    """Base of every error tony-jupyter raises on purpose."""


class SpecError(TonyError, ValueError):
    """Bad job input: flags, conf keys, sizes. Shown as one line (IPython UsageError)."""


class BundleError(TonyError, ValueError):
    """The cell or the names it needs cannot be shipped (syntax error, unpicklable name, ...)."""


class BackendError(TonyError, RuntimeError):
    """The backend could not start or reach the job (AM did not start, cluster unreachable)."""


class UnsafeFileError(TonyError, ValueError):
    """A file name or an archive member that would land outside where it is put, or that is
    not a plain file or directory (safefiles.py): refused, nothing written."""


class JobNotFoundError(TonyError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "job not found"


def remote_exception(traceback: str | None) -> tuple[str | None, str]:
    """(type, message) of the exception a formatted Python traceback ends with."""
    if not traceback:
        return None, ""
    lines = [line for line in traceback.rstrip().splitlines() if line.strip()]
    if not lines or lines[0].startswith(" "):
        return None, ""
    last = lines[-1]
    if last.startswith(" "):
        return None, ""
    name, sep, message = last.partition(": ")
    if not name.replace(".", "").replace("_", "").isalnum():
        return None, ""
    return name, message if sep else ""


class JobFailedError(TonyError, RuntimeError):
    """The job ended FAILED/KILLED. Renders the *remote* traceback and names the task."""

    def __init__(
        self,
        job_id: str,
        state: str,
        reason: str,
        task: str | None = None,
        remote_traceback: str | None = None,
        others: tuple[tuple[str, str], ...] = (),
    ):
        self.job_id, self.state, self.reason = job_id, state, reason
        self.task, self.remote_traceback = task, remote_traceback
        # Every other task that failed, (task, its traceback or why it ended), as ipyparallel's
        # CompositeError carries each engine's: a second failure is not hidden by the first.
        self.others = others
        # The remote exception's type and message, as ipyparallel's RemoteError carries them,
        # so that str(e) says what failed: logs and collapsed error views show only that.
        self.remote_type, self.remote_message = remote_exception(remote_traceback)
        message = f"job {job_id} {state}: {reason}"
        if self.remote_type:
            message += f"; {self.remote_type}: {self.remote_message}".rstrip(": ")
        if others:
            names = ", ".join(task for task, _ in others)
            message += f" (and {len(others)} other failed: {names})"
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of the local (uninteresting) traceback.
        head = f"\x1b[0;31mJobFailedError\x1b[0m: job {self.job_id} {self.state}: {self.reason}"
        lines = [head]
        if self.remote_traceback:
            lines.append(f"--- remote traceback from {self.task} ---")
            lines.extend(self.remote_traceback.rstrip().splitlines())
        for task, text in self.others:
            lines.append(f"--- {task} failed too ---")
            lines.extend(text.rstrip().splitlines())
        return lines
