"""Running the user's code in a task: the cell or script from the bundle, its pushed names and
shards bound (each framework's environment is frameworkenv.py's)."""

from __future__ import annotations

import base64
import linecache
import os
import pickle
import sys
import types
from pathlib import Path

from .. import runtime
from ..core import shards, tables
from ..core.bundle import BundleInfo, split_last_expression
from ..core.jobdir import JobDir
from ..core.protocol import CellOutcome

# What the chief's value and pulled names may weigh: base64 in JSON, they must stay under the
# AM's request limit (am/http.py MAX_RESULT_BODY, 100 MB).
MAX_RESULT_BYTES = 64 << 20


class ResultTooLarge(Exception):
    """The cell's value and pulled names are more than can travel back to the notebook."""


def enter_src(bundle_dir: Path) -> str | None:
    """Step into the directory shipped with the job (tony_jupyter/core/srcdir.py), laid out as under
    the notebook's working directory: it becomes this task's working directory, and the
    shipped script's (or the notebook's) directory goes first on ``sys.path``. Returns that
    directory; None when nothing was shipped (--no-src-dir)."""
    meta = BundleInfo.read(JobDir(bundle_dir).bundle)
    if meta.src is None:
        return None
    # Not resolved: on YARN ``src`` is a link into the NodeManager's cache, and paths in the
    # container's own directory are what the user should see.
    root = os.path.abspath(JobDir(bundle_dir).src)
    os.chdir(root)
    rel = meta.src.get("rel") or ""
    here = os.path.join(root, rel) if rel else root
    sys.path.insert(0, here)
    return here


def run_user_code(bundle_dir: Path, is_chief: bool, src: str | None = None) -> CellOutcome:
    meta = BundleInfo.read(JobDir(bundle_dir).bundle)
    source = JobDir(bundle_dir).cell.read_text()
    filename = meta.filename
    if meta.argv and src is not None:  # the script's shipped copy
        filename = os.path.join(src, os.path.basename(filename))
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # The user's code is __main__, as under `python script.py`: code that looks itself up there
    # (tf.compat.v1.app.run() calls sys.modules["__main__"].main; pickle finds its classes).
    main = types.ModuleType("__main__")
    namespace = main.__dict__
    namespace["__builtins__"] = __builtins__
    # pickle imports cloudpickle's reconstructors itself when the names need them (a function
    # or class defined in the notebook): a cell that pushes none starts without it.
    namespace.update(pickle.loads(JobDir(bundle_dir).names.read_bytes()))
    namespace.update(shards.bind(bundle_dir, meta.shards))
    if meta.argv:  # %tony run SCRIPT: what `python SCRIPT args` would show it
        sys.argv = list(meta.argv)
        namespace["__file__"] = filename
        if src is None:  # --no-src-dir: the directory it has on the notebook's host
            sys.path.insert(0, os.path.dirname(filename))
    sys.modules["__main__"] = main
    return execute(source, filename, namespace, list(meta.pull), is_chief)


def execute(
    source: str, filename: str, namespace: dict, pull: list[str], is_chief: bool
) -> CellOutcome:
    """Run a cell in ``namespace``; the chief's outcome carries the value and pulled names."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    body, last = split_last_expression(source)
    exec(compile(body, filename, "exec"), namespace)  # noqa: S102 - running the user's cell is the point
    value = eval(compile(last, filename, "eval"), namespace) if last else None  # noqa: S307
    if not is_chief:
        return CellOutcome("ok")
    value = runtime.detach_history(value)
    pulled = {n: runtime.detach_history(namespace[n]) for n in pull if n in namespace}
    missing = [n for n in pull if n not in namespace]
    arrow, pulled = tables.split_tabular(pulled)  # tables and arrays travel as Arrow, not pickle
    import cloudpickle  # the chief's value only

    payload = cloudpickle.dumps({"value": value, "pulled": pulled, "missing": missing})
    size = len(payload) + sum(len(b) for b in arrow.values())
    if size > MAX_RESULT_BYTES:
        mb = 1 << 20
        raise ResultTooLarge(
            f"the cell's result (its last expression and --pull names) is {size / mb:.1f} MB; "
            f"at most {MAX_RESULT_BYTES / mb:.1f} MB travels back to the notebook. Write a large "
            "result to a file the notebook can read (e.g. under checkpoint_dir() or shared "
            "storage) and return its path"
        )
    return CellOutcome(
        "ok",
        value=base64.b64encode(payload).decode(),
        arrow={n: base64.b64encode(b).decode() for n, b in arrow.items()},
    )


def exit_code(e: SystemExit) -> int:
    """The exit code a ``SystemExit`` of the user's code asks for, as the interpreter reads it
    (None: 0; an int: itself; anything else, a message: 1)."""
    return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
