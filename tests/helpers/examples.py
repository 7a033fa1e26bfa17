"""Other people's training scripts (tests/examples/<tensorflow|tony>/<name>/, each with its
source, license and what was changed): put one beside a notebook with MNIST-shaped data, and
check that nothing is left behind (multiprocessing's /tmp/pymp-* directories)."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
from collections.abc import Iterator
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


@contextlib.contextmanager
def fixed_output_dir(example: str, path: str) -> Iterator[Path]:
    """For a script that writes to a fixed path (the parameter server tutorial's
    /tmp/my_working_dir): one test at a time (the local and the YARN partitions run side by
    side; a lock on the example's own directory), starting from no such directory, and none
    left afterwards. A stale BackupAndRestore backup there would resume training instead."""
    fd = os.open(EXAMPLES / example, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        shutil.rmtree(path, ignore_errors=True)
        try:
            yield Path(path)
        finally:
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)  # releases the lock
