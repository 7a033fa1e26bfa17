"""Spare executors that imported the kernel's last job's framework before the job came
(warm.preload; am/warmstart.py's plan): a like job trains in them and finds its framework imported
already (MultiWorkerMirroredStrategy, PyTorch DDP, JAX); a job whose environment differs in any
one variable a framework reads as it loads, or whose cell sets one itself, starts in a fresh
interpreter; a GPU task never takes a spare that imported under other CUDA_VISIBLE_DEVICES.
Real processes and frameworks, local backend; no timings."""

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from helpers.cells import DDP, JAX, MWMS
from helpers.jobs import FAST, submit, wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter.am import warmstart as spare_plan
from tony_jupyter.am.local import LocalProvider
from tony_jupyter.core import loadenv
from tony_jupyter.core import warmproc as warm
from tony_jupyter.core.protocol import ExecutorEnv
from tony_jupyter.launcher import localwarm as spare_am
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.options import parse_job_args

pytestmark = pytest.mark.slow

# A shared library each framework's import maps: the spare has imported it.
LIBRARY = {"tensorflow": "libtensorflow_framework", "pytorch": "libtorch", "jax": "/jaxlib/"}
MODULE = {"tensorflow": "tensorflow", "pytorch": "torch", "jax": "jax"}
# The cell's first lines: which frameworks this interpreter had imported before the cell, and
# which process ran it.
BEFORE = """
import os as _os, sys as _sys
before = (sorted(m for m in ("tensorflow", "torch", "jax") if m in _sys.modules), _os.getpid())
"""


@pytest.fixture(autouse=True)
def _spares_import(monkeypatch):
    """On, as a user gets it (tests/conftest.py turns it off for the rest of the suite)."""
    monkeypatch.delenv("TONY_JUPYTER_WARM_IMPORT", raising=False)


def preloaded(flags: str, executors: int = 2, timeout: float = 240.0):
    """The kernel's spare AM, started as after a job with ``flags``; once each of its spare
    executors has imported that job's framework: (the AM, the executors' pids)."""
    _, spec = parse_job_args(flags)
    spare_am.discard()
    spare_am.start(executors, spec)
    ready = spare_am.current()
    assert ready is not None
    am = psutil.Process(ready.proc.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = am.children()
        if len(kids) == executors and all(_mapped(p.pid, spec.framework) for p in kids):
            return ready, [p.pid for p in kids]
        time.sleep(0.2)
    raise AssertionError(f"the spare executors did not import {spec.framework} in {timeout} s")


def _mapped(pid: int, framework: str) -> bool:
    try:
        return LIBRARY[framework] in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.fixture
def digits(shell):
    X, y = load_digits(return_X_y=True)
    shell.user_ns["X"], shell.user_ns["y"] = (X / 16.0).astype("float32"), y
    yield shell
    spare_am.discard()


def _check_mwms(ns, last):
    assert ns["replicas"] == 2
    assert last == ns["history"]["loss"][-1] < ns["history"]["loss"][0]
    assert ns["history"]["accuracy"][-1] > 0.5


def _check_ddp(ns, last):
    losses = ns["losses"]
    assert last == losses[-1] and sum(losses[-10:]) < sum(losses[:10]) * 0.6
    assert ns["equal"] is True and ns["ranks"] == [0, 2, 0, 2]


def _check_jax(ns, last):
    assert ns["seen"][:3] == (0, 2, 3.0)  # process 0 of 2; the psum added both processes'
    assert last == ns["losses"][-1] < ns["losses"][0] / 10 and ns["same"] is True


@pytest.mark.parametrize(
    "framework, flags, cell, pull, check",
    [
        ("tensorflow", "", MWMS, "history,replicas", _check_mwms),
        ("pytorch", "--framework pytorch --memory 1g", DDP, "losses,equal,ranks", _check_ddp),
        ("jax", "--framework jax --memory 1g", JAX, "losses,seen,same", _check_jax),
    ],
)
def test_a_warm_job_trains_in_spares_that_imported_its_framework(
    digits, tony_home, framework, flags, cell, pull, check
):
    flags = f"--workers 2 {FAST} {flags}"
    ready, executors = preloaded(flags)
    last = digits.run_cell_magic("tony", f"{flags} --pull before,{pull}", BEFORE + cell)
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == ready.proc.pid  # the spare AM ran it
    imported, pid = digits.user_ns["before"]
    assert pid in executors  # the chief ran in a spare executor ...
    assert MODULE[framework] in imported  # ... which had imported its framework
    check(digits.user_ns, last)
    log = (rec.dir / "logs" / "attempt-1" / "worker-1.stdout").read_text()
    assert "Traceback" not in log
    assert wait_no_processes(tony_home) == []


# One variable a framework reads as it loads, each: set in the kernel after its spare imported
# JAX (the cheapest of the three to import), or set by the cell itself before its import.
LOAD_VARIABLES = [
    "CUDA_VISIBLE_DEVICES",
    "TF_USE_LEGACY_KERAS",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS",
    "KERAS_BACKEND",
    "JAX_PLATFORMS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
]
VALUES = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "KERAS_BACKEND": "jax"}
# The variable's name comes from the notebook: a cell that names one in a string may set it.
SEEN = BEFORE + "import jax\nseen_var = _os.environ.get(LOAD_VAR)\n"
JAX_FLAGS = f"--framework jax --workers 1 --memory 1g {FAST} --pull before,seen_var"


@pytest.mark.parametrize("var", LOAD_VARIABLES)
def test_the_rule_no_spare_for_a_task_whose_load_variable_differs_or_that_its_cell_sets(var):
    """The rule the real cases below check through processes (one of them in CI, every one in
    the full tier: tests/tiers.py): a variable a framework reads as it loads, set in the task's
    environment but not the spare's, or set by the cell, sends the task to a fresh interpreter."""
    value = VALUES.get(var, "cpu" if var == "JAX_PLATFORMS" else "1")
    assert loadenv.imports_as("jax", {}, {})
    assert not loadenv.imports_as("jax", {}, {var: value})
    assert not loadenv.imports_as("jax", {var: value}, {})
    assert loadenv.imports_alike(loadenv.load_env_writes("import os\n"), {})
    writes = loadenv.load_env_writes(f"import os\nos.environ[{var!r}] = {value!r}\n")
    assert not loadenv.imports_alike(writes, {})


@pytest.mark.parametrize("var", LOAD_VARIABLES)
def test_a_job_whose_load_environment_differs_gets_a_fresh_interpreter(
    shell, tony_home, monkeypatch, var
):
    value = VALUES.get(var, "cpu" if var == "JAX_PLATFORMS" else "1")
    monkeypatch.delenv(var, raising=False)
    ready, executors = preloaded(JAX_FLAGS, executors=1)
    monkeypatch.setenv(var, value)  # after the spare imported JAX without it
    shell.user_ns["LOAD_VAR"] = var
    try:
        shell.run_cell_magic("tony", JAX_FLAGS, SEEN)
    finally:
        spare_am.discard()
    imported, pid = shell.user_ns["before"]
    (rec,) = list_jobs()
    assert int((rec.dir / "am.pid").read_text()) == ready.proc.pid  # the AM imports no framework
    assert pid not in executors and imported == []  # a fresh interpreter ran the task
    assert shell.user_ns["seen_var"] == value
    assert wait_no_processes(tony_home) == []


@pytest.mark.parametrize("var", ["XLA_FLAGS", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES"])
def test_a_cell_that_sets_a_load_variable_gets_a_fresh_interpreter(shell, tony_home, var):
    ready, executors = preloaded(JAX_FLAGS, executors=1)
    value = VALUES.get(var, "cpu" if var == "JAX_PLATFORMS" else "")
    cell = f"import os\nos.environ[{var!r}] = {value!r}\n" + SEEN
    shell.user_ns["LOAD_VAR"] = var
    try:
        shell.run_cell_magic("tony", JAX_FLAGS, cell)
    finally:
        spare_am.discard()
    imported, pid = shell.user_ns["before"]
    assert pid not in executors and imported == []
    assert shell.user_ns["seen_var"] == value
    assert wait_no_processes(tony_home) == []


def test_a_like_job_takes_the_spare_that_imported_for_it(shell, tony_home):
    """The other side of the two above: nothing changed, the task runs in the spare."""
    ready, executors = preloaded(JAX_FLAGS, executors=1)
    shell.user_ns["LOAD_VAR"] = "JAX_PLATFORMS"
    try:
        shell.run_cell_magic("tony", JAX_FLAGS, SEEN)
    finally:
        spare_am.discard()
    imported, pid = shell.user_ns["before"]
    assert pid in executors and imported == ["jax"]
    assert wait_no_processes(tony_home) == []


# The GPU rule, with no GPU: a local GPU job's tasks get CUDA_VISIBLE_DEVICES from the provider.


def test_the_spares_for_a_gpu_job_import_under_each_tasks_devices():
    _, spec = parse_job_args("--workers 2 --gpus 2 --evaluator")
    planned = spare_plan.plan(3, spec.to_json())
    devices = [extra.get("CUDA_VISIBLE_DEVICES") for _, extra in planned]
    assert [fw for fw, _ in planned] == ["tensorflow"] * 3
    assert devices == ["0,1", "2,3", None]  # launch order: the workers, then the evaluator
    assert all(extra["TF_USE_LEGACY_KERAS"] == "1" for _, extra in planned)


@pytest.fixture
def fake_spares():
    """Spare executors (``sleep``, which ignores the task handed to it) that imported
    TensorFlow under CUDA_VISIBLE_DEVICES 1, none, and 0."""
    base = dict(os.environ, PYTHONUNBUFFERED="1")
    base.pop("CUDA_VISIBLE_DEVICES", None)
    made = []
    for devices in ("1", None, "0"):
        env = dict(base) if devices is None else dict(base, CUDA_VISIBLE_DEVICES=devices)
        made.append(warm.WarmProcess.start(["sleep", "60"], env, framework="tensorflow"))
    yield made
    for s in made:
        s.proc.kill()
        s.proc.wait()


def test_a_gpu_task_takes_only_a_spare_that_imported_under_its_devices(tmp_path, fake_spares):
    provider = LocalProvider(tmp_path, spares=fake_spares)
    _, spec = parse_job_args("--workers 3 --gpus 1")
    env = {ExecutorEnv.var("job_id"): "j"}
    worker = spec.task("worker")
    provider.launch(worker, "worker:0", 1, env)  # CUDA_VISIBLE_DEVICES=0: the third spare
    assert provider.procs[("worker:0", 1)] is fake_spares[2].proc
    provider.launch(worker, "worker:1", 1, env)  # =1: the first
    assert provider.procs[("worker:1", 1)] is fake_spares[0].proc
    provider.launch(worker, "worker:2", 1, env)  # =2: none imported under it
    fresh = provider.procs[("worker:2", 1)]
    assert fresh not in [s.proc for s in fake_spares]
    assert not fake_spares[1].used  # the spare with no CUDA_VISIBLE_DEVICES was not handed one
    fresh.kill()
    fresh.wait()


@pytest.mark.parametrize(
    "cell, alike",
    [
        ("import tensorflow as tf\ncfg = os.environ['TF_CONFIG']", True),
        ("os.environ['TF_CONFIG'] = '{}'", True),  # read when a strategy is made
        ("print(os.environ.get('XLA_FLAGS'))", True),  # read, not set
        ("os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')", True),  # as imported under
        ("os.environ['TF_USE_LEGACY_KERAS'] = '1'", True),
        ("os.environ.setdefault('TF_USE_LEGACY_KERAS', '0')", True),  # set already: a no-op
        ("os.environ['TF_USE_LEGACY_KERAS'] = '0'", False),
        ("os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'", False),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = ''", False),
        ("os.environ.setdefault('KERAS_BACKEND', 'jax')", False),  # unset where imported
        ("del os.environ['XLA_FLAGS']", False),
        ("os.environ.pop('OMP_NUM_THREADS')", False),
        ("from os import environ\nenviron['JAX_PLATFORMS'] = 'cpu'", False),
        ("os.environ[name] = value", False),  # a computed name: cannot be told
        ("os.environ.update(TF_CPP_MIN_LOG_LEVEL='3')", False),
        ("os.putenv('OMP_NUM_THREADS', '1')", False),
        ("x = (", False),  # cannot be parsed: as if it set one
    ],
)
def test_a_cell_setting_a_load_variable_is_told_from_its_text(cell, alike):
    imported_under = {"TF_USE_LEGACY_KERAS": "1"}
    assert loadenv.imports_alike(loadenv.load_env_writes(cell), imported_under) is alike


def test_a_spare_that_imported_nothing_still_fits_a_changed_load_environment():
    spare = warm.WarmProcess(subprocess.Popen(["sleep", "30"]), {"XLA_FLAGS": "a"})
    try:
        assert spare.fits({"XLA_FLAGS": "b", "CUDA_VISIBLE_DEVICES": "0"})
        spare.framework = "jax"
        assert not spare.fits({"XLA_FLAGS": "b"})
        assert not spare.fits({"XLA_FLAGS": "a", "CUDA_VISIBLE_DEVICES": "0"})
        assert spare.fits({"XLA_FLAGS": "a", "TF_CONFIG": "{}"})  # read by strategies, not import
    finally:
        spare.proc.kill()
        spare.proc.wait()


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def test_after_a_job_its_spares_import_its_framework_once_it_has_ended(tony_home):
    """The next job's spares start while a job runs, but import its framework only after it
    ended: the import takes no CPU from the job's tasks."""
    spare_am.discard()
    client = submit(
        JAX_FLAGS.replace(" --pull before,seen_var", ""), "import time\ntime.sleep(8)", {}
    )
    try:
        deadline = time.monotonic() + 60
        kids: list = []
        while time.monotonic() < deadline and client.snapshot().state != "SUCCEEDED":
            s = spare_am.current()
            kids = psutil.Process(s.proc.pid).children() if s is not None else []
            # (a child caught between its fork and its exec still shows its parent's cmdline)
            if kids and all("jax" in _cmdline(p) for p in kids):
                break
            time.sleep(0.1)
        assert kids, "no spare executor was started while the job ran"
        assert all("jax" in _cmdline(p) for p in kids)  # started to import the job's framework
        while client.snapshot().state not in ("SUCCEEDED", "FAILED", "KILLED"):
            assert not any(_mapped(p.pid, "jax") for p in kids)  # ... not while the job runs
            time.sleep(0.2)
        assert client.snapshot().state == "SUCCEEDED"
        deadline = time.monotonic() + 240
        while not all(_mapped(p.pid, "jax") for p in kids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(_mapped(p.pid, "jax") for p in kids)  # imported once it ended
    finally:
        client.release()
        spare_am.discard()
    assert wait_no_processes(tony_home) == []
