"""A "before" side for a part: tony_jupyter as it was at a git revision, measured in the same run
as the working tree's, A B A B. ``tree(rev)`` unpacks that revision's package beside this bench
(the same bench code, the older package); ``call(tree, "bench.startup:run_tony", 2)`` runs one
side's function there, in a child process whose own children (the AM, the executors) import
the older package too, and returns its JSON answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench.lib.common import REPO


def tree(rev: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix="tony-bench-before-"))
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "tony_jupyter"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout
    tar = out / "before.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(out, filter="data")
    tar.unlink()
    shutil.copytree(REPO / "bench", out / "bench", ignore=shutil.ignore_patterns("results"))
    # Compiled once, as an installed package is: neither side pays for compiling at import.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(out)], check=True)
    return out


def call(where: Path, target: str, *args, timeout: float = 300):
    module, func = target.split(":")
    code = (
        "import json, sys\n"
        f"from {module} import {func}\n"
        f"print('@@' + json.dumps({func}(*json.loads(sys.argv[1]))))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(where))
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{target} at {where}: {out.stderr[-2000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("@@"))
    return json.loads(line[2:])


def compile_tree() -> None:
    """The working tree's package compiled as ``tree()`` compiles the older one."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "tony_jupyter")], check=True
    )
