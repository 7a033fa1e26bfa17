"""What the edge scripts share (edge_job.py, edge_fault.py, edge_features.py, edge_secure.py:
each runs on the edge host as a notebook's kernel would, through `devcluster exec edge`, and
imports this module from beside it)."""

from __future__ import annotations

import numpy as np
from IPython.core.interactiveshell import InteractiveShell

# A cell's MultiWorkerMirroredStrategy over the kernel's (X, y), with a small Keras model.
MWMS = """
strategy = tf.distribute.MultiWorkerMirroredStrategy()
dataset = tf.data.Dataset.from_tensor_slices((X, y)).shuffle(512, seed=0).repeat().batch(64)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((16,)), tf.keras.layers.Dense(4)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
"""


def kernel(data: bool = True) -> InteractiveShell:
    """The IPython shell with tony_jupyter loaded and, with ``data``, (X, y) of 512 rows. (A
    first job from the edge waits minutes for its AM, whose container localizes the packed venv
    first: the launcher counts that against the localization timeout, not the AM's start.)"""
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tony_jupyter")
    if data:
        rng = np.random.default_rng(0)
        ip.user_ns["X"] = rng.normal(size=(512, 16)).astype("float32")
        ip.user_ns["y"] = rng.integers(0, 4, size=512)
    return ip
