"""What the edge scripts share (the edge_*.py beside it: each runs on the edge host as a
notebook's kernel would, through `devcluster exec edge`, and imports this module from beside
it)."""

from __future__ import annotations

import os
import time

import numpy as np
import requests
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


def wait_app_end(app_id: str, timeout: float = 120, http=None) -> dict:
    """The RM's report of the app once it has ended (or at ``timeout``): a cell's result comes
    back before its AM unregisters. ``http``: a session of its own (SPNEGO), else as root."""
    rm = os.environ["TONY_DEVCLUSTER_RM_URL"]
    get = http.get if http is not None else requests.get
    params = None if http is not None else {"user.name": "root"}
    deadline = time.monotonic() + timeout
    while True:
        app = get(f"{rm}/ws/v1/cluster/apps/{app_id}", params=params, timeout=10).json()["app"]
        if app["state"] in ("FINISHED", "FAILED", "KILLED") or time.monotonic() > deadline:
            return app
        time.sleep(0.5)
