"""Other people's training scripts (tests/examples/<tensorflow|tony>/<name>/, each with its
source, license and what was changed): put one beside a notebook with MNIST-shaped data, and
check that nothing is left behind (multiprocessing's /tmp/pymp-* directories)."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def mnist_arrays(n: int = 60000) -> tuple[np.ndarray, np.ndarray]:
    """MNIST's shape and dtype without the download: scikit-learn's bundled 8x8 digits,
    upscaled 3x and padded to 28x28 uint8 in [0, 255], int labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = np.kron(digits.images, np.ones((3, 3))) * (255.0 / 16.0)
    x = np.pad(x, ((0, 0), (2, 2), (2, 2))).astype(np.uint8)
    reps = -(-n // len(x))
    return np.tile(x, (reps, 1, 1))[:n], np.tile(digits.target, reps)[:n].astype(np.uint8)


def place(example: str, notebook: Path) -> Path:
    """Copy tests/examples/<example>/ into ``notebook`` (the kernel's working directory),
    with mnist.npz beside it (what the scripts' swapped loaders read)."""
    for f in (EXAMPLES / example).iterdir():
        if f.is_file():
            shutil.copy(f, notebook / f.name)
    x, y = mnist_arrays()
    np.savez_compressed(
        notebook / "mnist.npz", x_train=x, y_train=y, x_test=x[:1000], y_test=y[:1000]
    )
    return notebook


def pymp_dirs(tmp: str | None = None) -> set[str]:
    return set(glob.glob(os.path.join(tmp or "/tmp", "pymp-*")))


def mnist_idx(root: Path) -> Path:
    """MNIST's four raw files in its own IDX format under ``root/MNIST/raw/``, where
    ``torchvision.datasets.MNIST(root, download=True)`` looks before downloading: 60000 train
    and 10000 test images (28x28 uint8) and their uint8 labels, from :func:`mnist_arrays`."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    x, y = mnist_arrays(70000)
    for prefix, sl in (("train", slice(0, 60000)), ("t10k", slice(60000, 70000))):
        images, labels = x[sl], y[sl]
        header = np.array([2051, len(images), 28, 28], ">i4").tobytes()
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(header + images.tobytes())
        header = np.array([2049, len(labels)], ">i4").tobytes()
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(header + labels.tobytes())
    return root
