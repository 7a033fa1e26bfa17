"""The training every side runs: a %%tony cell (BENCH pushed from the notebook), a process
started by hand with TF_CONFIG, or a distributed-shell container (which has no rendezvous:
the tasks find each other through files in a shared directory, as one host allows).

Writes OUT/<task index>.json with wall-clock marks: process in user code, TF_CONFIG known,
TensorFlow imported, first training step done, end; and steps/s after a warm-up. Optionally
prints LINES_PER_S stamped log lines and reports a stamped progress value every 10 ms
(the streaming bench reads both at the widget's model).
"""

import json
import os
import resource
import socket
import threading
import time

T_START = time.time()
try:
    BENCH  # noqa: B018 - pushed into the cell's namespace by %%tony
except NameError:
    with open(os.environ["BENCH_CONF"]) as _f:
        BENCH = json.load(_f)


def _rendezvous(directory: str, n: int) -> str:
    """distributed-shell containers know nothing of each other: each takes a port, writes it
    into ``directory``, and waits for all ``n``; the sorted ports give every task its index."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = os.path.join(directory, f".{port}")
    with open(tmp, "w") as f:
        f.write(os.environ.get("CONTAINER_ID", ""))
    os.rename(tmp, os.path.join(directory, str(port)))
    while True:
        ports = sorted(int(p) for p in os.listdir(directory) if not p.startswith("."))
        if len(ports) >= n:
            break
        time.sleep(0.01)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:n]]}
    task = {"type": "worker", "index": ports.index(port)}
    return json.dumps({"cluster": cluster, "task": task})


if "TF_CONFIG" not in os.environ and BENCH.get("rendezvous"):
    os.environ["TF_CONFIG"] = _rendezvous(BENCH["rendezvous"], BENCH["workers"])
T_TF_CONFIG = time.time()
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tony-jupyter's executors set
_index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
_stop = threading.Event()


def _write(result: dict) -> None:
    tmp = os.path.join(BENCH["out"], f".{_index}")
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.rename(tmp, os.path.join(BENCH["out"], f"{_index}.json"))


if not int(BENCH.get("steps", 50)):
    # Start-up only (steps 0: tests/yarn/test_yarn_startup_guard.py): no TensorFlow at all.
    _write(
        {
            "index": _index,
            "pid": os.getpid(),
            "t_start": T_START,
            "t_tf_config": T_TF_CONFIG,
            "t_tf_imported": T_TF_CONFIG,
            "t_first_step": T_TF_CONFIG,
            "t_end": T_TF_CONFIG,
            "steps": 0,
            "steps_per_s": 0.0,
            "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )
    raise SystemExit(0)


def _chatter(rate: float, probe: bool) -> None:
    """``rate`` stamped lines per second, in bursts every 10 ms; a stamped progress value."""
    report = None
    if probe:
        try:
            from tony_jupyter.runtime import report
        except ImportError:
            pass
    seq, began = 0, time.time()
    while not _stop.wait(0.01):
        now = time.time()
        due = int((now - began) * rate) if rate else 0
        while seq < due:
            print(f"BENCHLOG {time.time():.6f} {_index} {seq}", flush=True)
            seq += 1
        if report is not None:
            report(probe=now)


if BENCH.get("lines_per_s") or BENCH.get("probe"):
    threading.Thread(
        target=_chatter, args=(BENCH.get("lines_per_s", 0), BENCH.get("probe")), daemon=True
    ).start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

T_TF = time.time()
_steps = int(BENCH.get("steps", 50))
_marks: list[float] = []


class _Marks(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        _marks.append(time.time())


_strategy = tf.distribute.MultiWorkerMirroredStrategy()
_rng = np.random.default_rng(0)
_x = _rng.normal(size=(4096, 64)).astype("float32")
_y = _rng.integers(0, 10, size=(4096,))
_options = tf.data.Options()
_options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
_data = tf.data.Dataset.from_tensor_slices((_x, _y)).repeat().batch(64).with_options(_options)
with _strategy.scope():
    _model = tf.keras.Sequential(
        [
            tf.keras.layers.Input((64,)),
            tf.keras.layers.Dense(BENCH.get("width", 256), activation="relu"),
            tf.keras.layers.Dense(BENCH.get("width", 256), activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    _model.compile(
        "adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False
    )
_model.fit(_data, epochs=1, steps_per_epoch=_steps, verbose=0, callbacks=[_Marks()])
_stop.set()
_warm = min(10, max(1, _steps // 5))
_result = {
    "index": _index,
    "pid": os.getpid(),
    "t_start": T_START,
    "t_tf_config": T_TF_CONFIG,
    "t_tf_imported": T_TF,
    "t_first_step": _marks[0],
    "t_end": _marks[-1],
    "steps": len(_marks),
    "steps_per_s": (len(_marks) - 1 - _warm) / (_marks[-1] - _marks[_warm]),
    "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}
_write(_result)
