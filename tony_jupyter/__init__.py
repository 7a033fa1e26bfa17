"""tony-jupyter: distributed TensorFlow on YARN, from a ``%%tony`` cell."""

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .magics import TonyMagics, start_spares

    ipython.register_magics(TonyMagics(ipython))
    start_spares()


def _jupyter_server_extension_points():
    return [{"module": "tony_jupyter.server_ext"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "tony-jupyter"}]


def progress(**kwargs):
    """A Keras callback that reports epoch/step/loss/metrics to the job's widget."""
    from .runtime import progress as _progress

    return _progress(**kwargs)


def report(step=None, **metrics) -> None:
    """Report a training step's metrics from any loop (PyTorch, JAX, ...) to the job's widget:
    ``report(step=i, loss=loss.item(), total_steps=n)``."""
    from .runtime import report as _report

    _report(step, **metrics)


def checkpoint_dir() -> str:
    """A directory that survives the job's attempts (for BackupAndRestore or checkpoints)."""
    from .runtime import checkpoint_dir as _checkpoint_dir

    return _checkpoint_dir()


def tensorboard_dir() -> str:
    """The job's TensorBoard log directory."""
    from .runtime import tensorboard_dir as _tensorboard_dir

    return _tensorboard_dir()
