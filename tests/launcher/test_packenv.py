"""What --pack-env's archive holds: the venv's packages, without ``__pycache__`` or TensorFlow's
C++ headers (packenv.LEFT_OUT), and a content hash that changes with the venv's files."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tony_jupyter.launcher.yarn import packenv


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    for rel, text in {
        "tensorflow/__init__.py": "VERSION = 1\n",
        "tensorflow/include/tensorflow/core/framework/op.h": "// a header\n",
        "tensorflow/__pycache__/__init__.cpython-311.pyc": "",
        "mypkg/include/keep.h": "// another package's headers stay\n",
    }.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    return root


def test_the_archive_leaves_out_pycache_and_tensorflows_headers_only(venv, tmp_path):
    out = tmp_path / "env.tar.gz"
    packenv.pack(venv, out)
    with tarfile.open(out) as tar:
        names = tar.getnames()
    tail = [n.split("site-packages/", 1)[1] for n in names if "site-packages/" in n]
    assert "tensorflow/__init__.py" in tail, names
    assert "mypkg/include/keep.h" in tail, names
    assert not [n for n in tail if n.startswith("tensorflow/include")], names
    assert not [n for n in names if "__pycache__" in n], names
    assert any(n.endswith("pyvenv.cfg") for n in names), names


def test_the_hash_follows_the_files_but_not_pycache(venv):
    site = next((venv / "lib").glob("python3*/site-packages"))
    first = packenv.content_hash(venv)
    (site / "tensorflow" / "__pycache__" / "other.pyc").write_text("x")
    assert packenv.content_hash(venv) == first
    (site / "tensorflow" / "new.py").write_text("x = 1\n")
    assert packenv.content_hash(venv) != first


@pytest.mark.parametrize("size", [0, 1, 10_000, 65_536 * 3 + 7])
def test_the_parallel_gzip_unpacks_as_the_nodemanager_does(tmp_path, monkeypatch, size):
    # Blocks of 64 KiB: a larger source is several gzip members, which `gzip -dc` (what a
    # NodeManager runs on a .tar.gz) and Python's gzip both read whole, in order.
    monkeypatch.setattr(packenv, "BLOCK", 65_536)
    data = random.Random(size).randbytes(size // 2) + b"tony" * (size // 8)
    src, out = tmp_path / "a.tar", tmp_path / "a.tar.gz"
    src.write_bytes(data)
    packenv.gzip_in_parallel(src, out, threads=3)
    members = out.read_bytes().count(b"\x1f\x8b\x08")
    assert members >= max(1, -(-len(data) // 65_536))
    assert gzip.decompress(out.read_bytes()) == data
    unpacked = subprocess.run(["gzip", "-dc", str(out)], capture_output=True, check=True)
    assert unpacked.stdout == data


def test_a_packed_archive_leaves_no_plain_tar_beside_it(venv, tmp_path):
    out = tmp_path / "env.tar.gz"
    packenv.pack(venv, out)
    assert [p.name for p in tmp_path.iterdir() if p.name != "venv"] == ["env.tar.gz"]
