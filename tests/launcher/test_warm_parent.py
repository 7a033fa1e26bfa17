"""A kernel's spare AM and its spare executors end with the kernel (issue 42, finding 7), also
when another process holds the write end of the spare AM's stdin (a child the kernel forked
inherits it, and EOF never comes), and while the spare executors import their framework (which
reads no stdin meanwhile: TensorFlow's takes tens of seconds on a busy machine, holding the GIL
for seconds at a time). Real processes: a kernel, killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

KERNEL = """
import os, sys, time
from tony_jupyter.launcher import localwarm as spare
from tony_jupyter.options import parse_job_args
spec = None
if {framework!r}:
    spec = parse_job_args("--workers 2 --no-tensorboard --framework " + {framework!r})[1]
spare.start(2, spec)  # told to import its framework at once (no job before it)
if {fork!r} and os.fork() == 0:  # a child of the kernel: it inherits the spare's stdin pipe
    os.setsid()
    time.sleep(600)
    os._exit(0)
print(spare._spare.proc.pid, flush=True)
time.sleep(600)
"""


def spare_family(framework: str = "", fork: bool = False, env: dict | None = None):
    """A kernel with its spare AM and 2 spare executors: (kernel, [AM, executors...])."""
    code = KERNEL.format(framework=framework, fork=fork)
    # the spares run this checkout's code
    env = {**os.environ, "PYTHONPATH": os.getcwd(), **(env or {})}
    kernel = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    assert kernel.stdout is not None
    am = psutil.Process(int(kernel.stdout.readline()))
    deadline = time.monotonic() + 60
    while len(am.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    family = [am, *am.children()]
    assert len(family) == 3
    return kernel, family


def forked_children(kernel: subprocess.Popen, am: psutil.Process) -> list[psutil.Process]:
    return [p for p in psutil.Process(kernel.pid).children() if p.pid != am.pid]


def test_a_spare_ends_with_its_kernel_though_a_forked_child_holds_its_stdin():
    kernel, family = spare_family(fork=True)
    holders = forked_children(kernel, family[0])
    assert len(holders) == 1  # the kernel's forked child, with the pipe's write end
    try:
        kernel.kill()
        kernel.wait()
        gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        for p in holders:
            p.send_signal(signal.SIGKILL)


# A framework whose import holds the GIL in one C call, for as long as the test needs: on a busy
# machine TensorFlow's holds it for seconds at a time, for tens of seconds in all.
SLOW_IMPORT = """
import os
open(os.path.join(os.environ["TONY_TEST_MARKS"], str(os.getpid())), "w").close()
sum(range(10**13))
"""


def test_spare_executors_in_a_long_import_end_with_their_kernel(tmp_path):
    fake = tmp_path / "fake" / "tensorflow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(SLOW_IMPORT)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {
        "PYTHONPATH": f"{fake.parent}:{os.getcwd()}",
        "TONY_TEST_MARKS": str(marks),
        "TONY_JUPYTER_WARM_IMPORT": "1",  # tests/conftest.py turns it off
    }
    kernel, family = spare_family(framework="tensorflow", env=env)
    try:
        deadline = time.monotonic() + 30
        while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(marks.iterdir())) == 2  # both spare executors are in the import
        kernel.kill()
        kernel.wait()
        gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        for p in [psutil.Process(kernel.pid), *family] if kernel.poll() is None else family:
            if p.is_running():
                p.kill()
