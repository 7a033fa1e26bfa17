"""Other people's training scripts, put beside a notebook with MNIST-shaped data, and a check
that nothing is left behind (multiprocessing's /tmp/pymp-* directories).

The scripts themselves are not in this repository (their authors' code is not ours to commit):
``source(example)`` finds them in ``$TONY_EXAMPLES_DIR/<example>/``, by default
``<checkout>/../shared/examples/<example>/`` (the project's shared directory), laid out and
pinned as tests/examples/README.md says; a test skips, naming that place, when they are not
there. tests/examples/<example>/ holds only what this project wrote for them (a stand-in for a
data module TensorFlow 2 no longer has)."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"  # this project's own parts
SOURCES = Path(
    os.environ.get("TONY_EXAMPLES_DIR")
    or Path(__file__).resolve().parents[3] / "shared" / "examples"
)


def source(example: str) -> Path:
    """The directory with ``example``'s own files (SOURCES/<example>/); skips the test, naming
    where they go, when it is not there."""
    import pytest

    d = SOURCES / example
    if not d.is_dir() or not any(d.iterdir()):
        pytest.skip(
            f"{example}: its authors' files are not in this repository; put them in {d} (or "
            "set TONY_EXAMPLES_DIR), as tests/examples/README.md lists them"
        )
    return d


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
    """Copy the example's files (its authors', then this project's own, if any) into
    ``notebook`` (the kernel's working directory), with mnist.npz beside them (what the
    scripts' swapped loaders read)."""
    for d in (source(example), EXAMPLES / example):
        for f in d.iterdir() if d.is_dir() else ():
            if f.is_file() and f.name != "README.md":
                shutil.copy(f, notebook / f.name)
    x, y = mnist_arrays()
    np.savez_compressed(
        notebook / "mnist.npz", x_train=x, y_train=y, x_test=x[:1000], y_test=y[:1000]
    )
    return notebook


def pymp_dirs(tmp: str | None = None) -> set[str]:
    return set(glob.glob(os.path.join(tmp or "/tmp", "pymp-*")))


@contextlib.contextmanager
def fixed_output_dir(example: str, path: str) -> Iterator[Path]:
    """For a script that writes to a fixed path (the parameter server tutorial's
    /tmp/my_working_dir): one test at a time (the local and the YARN partitions run side by
    side; a lock on the example's own directory), starting from no such directory, and none
    left afterwards. A stale BackupAndRestore backup there would resume training instead."""
    fd = os.open(source(example), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        shutil.rmtree(path, ignore_errors=True)
        try:
            yield Path(path)
        finally:
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)  # releases the lock


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
