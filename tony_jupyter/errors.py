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


class JobNotFoundError(TonyError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "job not found"


class JobFailedError(TonyError, RuntimeError):
    """The job ended FAILED/KILLED. Renders the *remote* traceback and names the task."""

    def __init__(
        self,
        job_id: str,
        state: str,
        reason: str,
        task: str | None = None,
        remote_traceback: str | None = None,
    ):
        self.job_id, self.state, self.reason = job_id, state, reason
        self.task, self.remote_traceback = task, remote_traceback
        super().__init__(f"job {job_id} {state}: {reason}")

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of the local (uninteresting) traceback.
        head = f"\x1b[0;31mJobFailedError\x1b[0m: job {self.job_id} {self.state}: {self.reason}"
        lines = [head]
        if self.remote_traceback:
            lines.append(f"--- remote traceback from {self.task} ---")
            lines.extend(self.remote_traceback.rstrip().splitlines())
        return lines
