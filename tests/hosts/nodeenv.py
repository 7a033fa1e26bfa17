"""A venv for the nodes of a several-host cluster, made without the network: its base is the
nodes' own interpreter (so ``env/bin/python`` exists on every host once --pack-env ships it),
its packages copied file by file from this kernel's environment (their installed RECORDs), and
tony_jupyter and the devcluster's package copied in (venv-pack refuses an editable install; on
the edge, edge_ha.py drives the devcluster's failovers)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import tony_jupyter
import tony_jupyter_devcluster

# What the AM and a TensorFlow task import; tf-keras: tasks run tf.keras as Keras 2.
# And what tony-jupyter itself requires: the kernel runs in this venv too.
_TF = ["tensorflow", "tf-keras"]
ROOTS = [*_TF, "requests", "cloudpickle", "tornado", "psutil", "jpype1", "hdfs"]
ROOTS += ["tensorboard"]  # a job's TensorBoard runs in its chief's container
ROOTS += ["requests-gssapi"]  # the kernel's SPNEGO on a Kerberized cluster (the kerberos extra)
ROOTS += [r for r in metadata.distribution("tony-jupyter").requires or [] if "extra ==" not in r]

# Without TensorFlow (470 MB, not 2.5 GB): a job whose cell needs none of it, its TensorBoard
# included (test_hosts_tls.py's).
BASE_ROOTS = [r for r in ROOTS if r not in _TF]
# A venv for PyTorch and JAX jobs (test_hosts_frameworks.py), without TensorFlow. Of torch's
# CUDA wheels (nvidia-*, cuda-*: 3.5 GB) only the libraries its own link to (1.7 GB: torch does
# not import without them, even on a CPU), and no triton (1 GB, for torch.compile on a GPU).
FRAMEWORK_ROOTS = ["torch", "jax", *BASE_ROOTS]
FRAMEWORK_OMIT = ("triton",)
# The chief's MLflow run and the client that reads it back (test_hosts_mlflow.py): in the
# TensorFlow venv only, which that test's job uses.
ROOTS += ["mlflow-skinny"]
CUDA = ("nvidia-", "cuda-")


_EPOCH = 1_700_000_000  # any fixed time


def closure(roots: list[str], omit: tuple[str, ...] = ()) -> set[str]:
    """``roots`` and everything they require here (markers for extras left out), but for the
    distributions whose names start with one of ``omit``."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen or name.startswith(omit):
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return seen


def build(
    root: Path,
    python: Path,
    roots: list[str],
    omit: tuple[str, ...] = (),
    linked_only: tuple[str, ...] = (),
) -> Path:
    """The venv: ``roots`` and what they require (but ``omit``); of the distributions installed
    here whose names start with one of ``linked_only`` (those the others require through extras
    too), only the shared libraries that the others' link to (their ELF NEEDED entries,
    followed from library to library)."""
    venv = root / "venv"
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    names = closure(roots, omit)
    for name in sorted(n for n in names if not n.startswith(linked_only)):
        copy(name, site)
    if linked_only:
        dists = metadata.distributions()
        _copy_linked(site, [d for d in dists if _name(d).startswith(linked_only)])
    for package in (tony_jupyter, tony_jupyter_devcluster):
        pkg = Path(package.__file__).parent
        shutil.copytree(pkg, site / pkg.name, ignore=shutil.ignore_patterns("__pycache__"))
    _same_everywhere(venv)
    return venv


def _same_everywhere(venv: Path) -> None:
    """The files `venv` wrote alike wherever the venv is: no ``command`` line naming its path in
    pyvenv.cfg, no activate scripts, one mtime. --pack-env's hash covers relative paths, sizes
    and mtimes, so two venvs built from the same packages (two test sessions, the figures
    script) are one upload and one unpacking on each node, not one each."""
    cfg = venv / "pyvenv.cfg"
    lines = cfg.read_text().splitlines(keepends=True)
    cfg.write_text("".join(line for line in lines if not line.startswith("command")))
    for script in (venv / "bin").glob("[aA]ctivate*"):  # each names the venv's path
        script.unlink()  # (venv-pack writes its own into the archive)
    for path in [cfg, *(venv / "bin").iterdir()]:
        if path.is_file() and not path.is_symlink():
            os.utime(path, (_EPOCH, _EPOCH))


def _name(dist: metadata.Distribution) -> str:
    return dist.metadata["Name"].lower().replace("_", "-")


def _copy_linked(site: Path, dists: list[metadata.Distribution]) -> None:
    """From ``dists``, each shared library a library in ``site`` needs, and so on."""
    libs = {f.name: (d, f) for d in dists for f in d.files or [] if ".so" in f.name}
    todo = [p for p in site.rglob("*.so*") if p.is_file()]
    taken: set[str] = set()
    while todo:
        for soname in _needed(todo.pop()):
            if soname in libs and soname not in taken:
                taken.add(soname)
                dist, file = libs[soname]
                dest = site / file
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(dist.locate_file(file)), dest)
                todo.append(dest)


def _needed(lib: Path) -> list[str]:
    """The sonames an ELF file names as NEEDED (binutils' readelf; none for other files)."""
    res = subprocess.run(
        ["readelf", "-d", str(lib)], capture_output=True, text=True, check=False, timeout=60
    )
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", res.stdout)


def copy(name: str, site: Path) -> None:
    """Distribution ``name``'s installed files, as its RECORD lists them, into ``site``."""
    dist = metadata.distribution(name)
    for file in dist.files or []:
        src = Path(dist.locate_file(file))
        if ".." in file.parts or not src.is_file() or "__pycache__" in file.parts:
            continue
        dest = site / file
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
