"""What a framework reads as it is imported: the variables (``at_import``) under which a spare
executor imported its job's framework ahead of the job (warmproc.py), and the writes a cell makes to
them itself (``load_env_writes``), told from its text. A task is handed to such a spare only if
a fresh interpreter would have imported the framework alike (``imports_as``, ``imports_alike``).

The variables: ``CUDA_*`` (``CUDA_VISIBLE_DEVICES``), ``NVIDIA_*``, ``HIP_*``, ``ROCR_*``,
``TPU_*``, ``TF_*`` (not ``TF_CONFIG``, read when a strategy is made), ``XLA_*``, ``KERAS_*``,
``JAX_*``, ``TORCH_*``, ``PYTORCH_*``, ``NCCL_*``, and the thread settings of the numeric
libraries (``OMP_*``, ``KMP_*``, ``MKL_*``, ``OPENBLAS_*``, ``GOTO_*``, ``NUMEXPR_*``,
``VECLIB_*``, ``ONEDNN_*``, ``DNNL_*``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .protocol import ExecutorEnv

# What a framework (or the numeric libraries under it) reads as it is imported or first loads
# its runtime: the GPUs it may see, its own settings, its thread pools.
_AT_IMPORT_PREFIXES = (
    "TF_", "XLA_", "KERAS_", "JAX_", "TORCH_", "PYTORCH_", "CUDA_", "NVIDIA_", "NCCL_",
    "HIP_", "ROCR_", "TPU_", "OMP_", "KMP_", "MKL_", "OPENBLAS_", "GOTO_", "NUMEXPR_",
    "VECLIB_", "ONEDNN_", "DNNL_",
)  # fmt: skip


def at_import(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a framework reads as it is imported (or first loads its runtime)."""
    return {k: v for k, v in env.items() if _loads(k)}


def imports_as(framework: str, imported_under: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Whether a task with ``env`` is one of a ``framework`` job and would have imported it
    as a spare did under ``imported_under``."""
    same_job = env.get(ExecutorEnv.var("framework"), framework) == framework
    return same_job and at_import(imported_under) == at_import(env)


def _loads(name: str) -> bool:
    return name.startswith(_AT_IMPORT_PREFIXES) and name != "TF_CONFIG"


class _Untold(Exception):
    """What a cell writes cannot be told from its source (load_env_writes returns None)."""


def _const(node: ast.AST | None) -> str | None:
    ok = isinstance(node, ast.Constant) and isinstance(node.value, str)
    return node.value if ok else None  # type: ignore[union-attr]


def _environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _subscript_write(
    node: ast.Subscript, assigned: dict[int, str | None]
) -> tuple[str, str | None, bool] | None:
    """``environ[NAME] = ...`` or ``del environ[NAME]``."""
    if not (_environ(node.value) and isinstance(node.ctx, (ast.Store, ast.Del))):
        return None
    name = _const(node.slice)
    if name is None:
        raise _Untold
    return (name, assigned.get(id(node)), False) if _loads(name) else None


def _call_write(node: ast.Call) -> tuple[str, str | None, bool] | None:
    """``environ.setdefault(NAME, V)`` or ``environ.pop(NAME)``; any other change of the
    whole environment cannot be told."""
    f = node.func
    if not isinstance(f, ast.Attribute):
        return None
    if f.attr in ("putenv", "unsetenv"):
        raise _Untold
    if not _environ(f.value):
        return None
    if f.attr in ("update", "clear", "__setitem__", "__delitem__"):
        raise _Untold
    if f.attr not in ("setdefault", "pop"):
        return None
    name = _const(node.args[0]) if node.args else None
    if name is None:
        raise _Untold
    if not _loads(name):
        return None
    default = f.attr == "setdefault"
    return (name, _const(node.args[1]) if default and node.args[1:] else None, default)


def load_env_writes(source: str) -> list[tuple[str, str | None, bool]] | None:
    """What a cell writes, itself, into variables a framework reads as it is imported:
    ``(name, value, only_if_unset)``, value None where it is not a constant; None where it
    cannot be told (a computed name, ``putenv``, a whole-environment change, a syntax error)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    assigned: dict[int, str | None] = {}  # environ[...] targets: the constant assigned
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                assigned[id(target)] = _const(node.value)
    writes: list[tuple[str, str | None, bool]] = []
    try:
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript):
                write = _subscript_write(node, assigned)
            elif isinstance(node, ast.Call):
                write = _call_write(node)
            else:
                continue
            if write is not None:
                writes.append(write)
    except _Untold:
        return None
    return writes


def imports_alike(
    writes: list[tuple[str, str | None, bool]] | None, env: Mapping[str, str]
) -> bool:
    """Whether a cell's ``writes`` (``load_env_writes``) leave the variables a framework reads
    as they were in ``env``, which it was imported under."""
    if writes is None:
        return False
    for name, value, only_if_unset in writes:
        if value is None or (env.get(name) != value and not (only_if_unset and name in env)):
            return False
    return True
