"""What user code inside a task can call: progress reporting, checkpoint and TensorBoard dirs.

Outside a task (in the notebook itself) these still work, on directories under the temp dir,
so a cell can be tried locally before it is run with ``%%tony``.
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .core import jobdir
from .core.protocol import ExecutorEnv, clean_progress, parse_task_id

V = ExecutorEnv.var

_lock = threading.Lock()
_progress: dict = {}
# The chief's MLflow run (executor/mlflow_run.py), when the job has one: report() logs to it.
mlflow_run: Any = None


def current_progress() -> dict:
    """What the task reported, as its heartbeats send it: within the bounds the AM checks (a
    NaN loss as ``"nan"``; protocol.clean_progress)."""
    with _lock:
        return clean_progress(_progress)


def merge_progress(values: dict) -> None:
    """Progress another process of this task reported (an elastic job's rank, whose
    heartbeats are its executor's: executor/elastic.py)."""
    with _lock:
        _progress.update(values)


def report(step: int | None = None, **values) -> None:
    """Report progress from any training loop (PyTorch, JAX, plain Python) with the next
    heartbeat: the job's progress bar, its task table (step, loss) and its text view show it,
    as they show the Keras ``progress()`` callback's. ``step`` and any metric (``loss=``,
    ``accuracy=``...); ``total_steps=N`` (or ``epoch=``/``epochs=``) fills the progress bar.
    Values are merged: a metric reported once stays until reported again. Numbers (NumPy,
    PyTorch and JAX scalars too) travel as floats. On the chief of a job, numeric metrics are
    also written as TensorBoard scalars (``step_<metric>``) when TensorBoard is installed."""
    if step is not None:
        values["step"] = int(step)
    clean = _clean(values)
    with _lock:
        _progress.update(clean, time=time.time())
        at = _progress.get("step")
    if step is not None and _scalars.wanted():
        _scalars.write(clean, int(step))
    if mlflow_run is not None:  # epoch-end metrics go at the step the loop has reached
        mlflow_run.log({k: v for k, v in clean.items() if k not in _StepScalars.META}, at)


def _clean(values: dict) -> dict:
    clean = {}
    for k, v in values.items():
        try:
            clean[k] = v if isinstance(v, (int, str)) or v is None else float(v)
        except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of many values
            clean[k] = str(v)
    return clean


class _StepScalars:
    """report()'s metrics as TensorBoard scalars in tensorboard_dir()/train, through
    TensorBoard's own event writer: no TensorFlow import, so any framework's loop can use it."""

    META = ("step", "epoch", "epochs", "steps", "batch", "epoch_done", "total_steps")

    def __init__(self) -> None:
        self.writer: Any = None
        self.broken = False

    def wanted(self) -> bool:
        return not self.broken and V("task_id") in os.environ and task()["is_chief"]

    def write(self, values: dict, step: int) -> None:
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            scalars = [
                summary_pb2.Summary.Value(tag=f"step_{k}", simple_value=float(v))
                for k, v in values.items()
                if k not in self.META and isinstance(v, (int, float)) and not isinstance(v, bool)
            ]
            if not scalars:
                return
            if self.writer is None:
                writer = EventFileWriter(os.path.join(tensorboard_dir(), "train"), 100, 1)
                atexit.register(writer.close)
                self.writer = writer
            event = event_pb2.Event(wall_time=time.time(), step=step)
            event.summary.CopyFrom(summary_pb2.Summary(value=scalars))
            self.writer.add_event(event)
        except Exception as e:  # noqa: BLE001 - scalars are a convenience, training goes on
            print(f"[tony] TensorBoard scalars not written: {e}", flush=True)
            self.broken = True


_scalars = _StepScalars()


def task() -> dict:
    """This process's task: type, index, attempt, and whether it is the chief."""
    tid = os.environ.get(V("task_id"), "worker:0")
    type_, index = parse_task_id(tid)
    return {
        "type": type_,
        "index": index,
        "attempt": int(os.environ.get(V("attempt"), "1")),
        "is_chief": tid == os.environ.get(V("chief"), "worker:0"),
    }


@dataclass
class FitHistory:
    """What a Keras ``History`` a cell returns (or ``--pull``s) arrives as in the notebook:
    ``history``, ``epoch`` and ``params`` as Keras has them, without the model.

    The model cannot come along: pickling it reads its variables, which under
    MultiWorkerMirroredStrategy is a collective op that needs the other workers, and those
    have exited by the time the chief's result is sent.
    """

    history: dict = field(default_factory=dict)
    epoch: list = field(default_factory=list)
    params: dict = field(default_factory=dict)


def detach_history(value):
    """A Keras ``History`` (Keras 2 or 3) as a :class:`FitHistory`; anything else unchanged."""
    kind = type(value)
    if (
        kind.__name__ == "History"
        and kind.__module__.startswith(("keras", "tf_keras", "tensorflow"))
        and isinstance(getattr(value, "history", None), dict)
    ):
        return FitHistory(
            dict(value.history), list(getattr(value, "epoch", [])), dict(value.params or {})
        )
    return value


def _dir(env: str, name: str) -> str:
    path = os.environ.get(env) or os.path.join(tempfile.gettempdir(), "tony-jupyter", name)
    os.makedirs(path, exist_ok=True)
    return path


def checkpoint_dir() -> str:
    return _dir(V("checkpoint_dir"), jobdir.CHECKPOINTS)


def tensorboard_dir() -> str:
    return _dir(V("tensorboard_dir"), jobdir.TENSORBOARD)


def progress(every_n_steps: int = 1, summary_every_n_steps: int = 10, tensorboard=None):
    """A Keras callback reporting epoch/step/loss/metrics through the heartbeat.

    On the chief of a job it also writes them as TensorBoard scalars to tensorboard_dir()
    (``epoch_<metric>`` per epoch, as Keras' TensorBoard callback names them, and
    ``batch_<metric>`` every ``summary_every_n_steps`` steps), which the job's TensorBoard shows
    while training runs. ``tensorboard=False`` turns that off; ``True`` writes outside a job too.

    Under ParameterServerStrategy, Keras refuses batch-level callbacks: there it reports
    per epoch only.
    """
    import tensorflow as tf  # the user's cell has imported it already; resolves tf.keras

    if tensorboard is None:
        tensorboard = V("task_id") in os.environ and task()["is_chief"]
    summaries = _Summaries(tf) if tensorboard else None

    class EpochProgress(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            report(epochs=self.params.get("epochs"), steps=self.params.get("steps"))

        def on_epoch_begin(self, epoch, logs=None):
            report(epoch=epoch + 1)

        def on_epoch_end(self, epoch, logs=None):
            values = _floats(logs)
            report(epoch=epoch + 1, epoch_done=epoch + 1, **values)
            if summaries:
                summaries.write("epoch_", values, epoch + 1)

    class BatchProgress(EpochProgress):
        global_step = 0

        def on_train_batch_end(self, batch, logs=None):
            self.global_step += 1
            n = self.global_step
            if n % every_n_steps == 0 or (summaries and n % summary_every_n_steps == 0):
                values = _floats(logs, 1.0 / _summed_replicas(self.model))
                if n % every_n_steps == 0:
                    report(step=n, batch=batch + 1, **values)
                if summaries and n % summary_every_n_steps == 0:
                    summaries.write("batch_", values, n)

    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    return EpochProgress() if "ps" in cluster else BatchProgress()


class _Summaries:
    """TensorBoard scalars in tensorboard_dir(): ``train`` and ``validation`` runs, like Keras'
    TensorBoard callback lays them out; flushed at once so TensorBoard shows them live."""

    def __init__(self, tf):
        self.tf, self.writers, self.broken = tf, {}, False

    def write(self, prefix: str, values: dict, step: int) -> None:
        tf = self.tf
        if self.broken:
            return
        try:
            for key, value in values.items():
                run, name = ("validation", key[4:]) if key.startswith("val_") else ("train", key)
                if run not in self.writers:
                    path = os.path.join(tensorboard_dir(), run)
                    self.writers[run] = tf.summary.create_file_writer(path)
                with self.writers[run].as_default():
                    tf.summary.scalar(prefix + name, value, step=step)
            for writer in self.writers.values():
                writer.flush()
        except Exception as e:  # noqa: BLE001 - scalars are a convenience, training goes on
            print(f"[tony] TensorBoard scalars not written: {e}", flush=True)
            self.broken = True


def _summed_replicas(model) -> int:
    """tf.keras sums per-replica batch outputs across replicas (reduction 'auto' is 'sum' off
    TPU), so each batch log is N times the metric under N replicas; epoch logs are not."""
    strategy = getattr(model, "distribute_strategy", None)
    method = getattr(model, "distribute_reduction_method", None) or "auto"
    n = getattr(strategy, "num_replicas_in_sync", 1) or 1
    if method in ("auto", "sum") and "TPU" not in type(strategy).__name__:
        return int(n)
    return 1


def _floats(logs, scale: float = 1.0) -> dict:
    out = {}
    for k, v in (logs or {}).items():
        try:
            out[k] = float(v) * scale
        except (TypeError, ValueError):
            continue
    return out
