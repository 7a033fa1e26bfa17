"""The frameworks a job can run: TensorFlow, PyTorch, JAX. What each may ask for is checked here,
before anything is submitted; the environment each task gets is built by the executor
(executor/frameworkenv.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .errors import SpecError
from .protocol.taskid import task_id

FRAMEWORKS = ("tensorflow", "pytorch", "jax")
# TonY also ran these; they are out of scope, and the refusal says why.
RETIRED = {
    "mxnet": "MXNet is retired by Apache",
    "horovod": "Horovod has had no release since 2023",
}
# The task types of a PyTorch or JAX job: they have no parameter servers or evaluator.
COLLECTIVE_TYPES = ("chief", "worker")
# The modules a framework's tasks import, and what installs them.
MODULES = {"pytorch": (("torch",), "torch"), "jax": (("jax", "jaxlib"), "'jax[cpu]'")}
NAMES = {"tensorflow": "TensorFlow", "pytorch": "PyTorch", "jax": "JAX"}
# An elastic job: how often each agent restarts its workers (torchrun's --max-restarts), and how
# many lost workers the AM replaces in all, before the job fails.
ELASTIC_MAX_RESTARTS = 3
# The task whose agent hosts an elastic job's c10d rendezvous (its TCPStore), on the address
# it registered: the AM keeps it, the executors meet there.
RENDEZVOUS_TASK = task_id("worker", 0)


class Task(Protocol):
    """What the checks read of a task type (spec.TaskSpec has it; spec imports this module)."""

    @property
    def type(self) -> str: ...
    @property
    def instances(self) -> int: ...
    @property
    def gpus(self) -> int: ...


class Job(Protocol):
    """What the checks read of a job (spec.JobSpec has it)."""

    @property
    def framework(self) -> str: ...
    @property
    def procs_per_task(self) -> int: ...
    @property
    def min_workers(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...


def parse_framework(value: str, what: str = "--framework") -> str:
    name = value.strip().lower()
    if name in FRAMEWORKS:
        return name
    why = f" ({RETIRED[name]}; out of scope)" if name in RETIRED else ""
    raise SpecError(f"{what}={value}: tony-jupyter runs {', '.join(FRAMEWORKS)} jobs{why}")


# torchrun's --nproc-per-node: one process per GPU (or core) of a node; more ranks are more tasks
MAX_PROCS_PER_TASK = 64
PROCS_ABOVE = (
    f"--procs-per-task {{procs}} is above {MAX_PROCS_PER_TASK}, the most processes one task "
    "starts (one per GPU or core of its node): for more ranks, ask for more tasks "
    "(--workers N) with fewer processes each"
)


def check_tasks(job: Job, tasks: Sequence[Task]) -> None:
    """The task types and processes per task a framework allows (SpecBuilder.build)."""
    framework, procs = job.framework, job.procs_per_task
    name = NAMES[framework]
    if framework != "tensorflow":
        other = [t.type for t in tasks if t.type not in COLLECTIVE_TYPES]
        if other:
            raise SpecError(
                f"a {name} job has no {', '.join(other)} tasks (parameter servers and the "
                "evaluator are TensorFlow's roles): use --workers N (and --chief) only"
            )
    if procs < 1:
        raise SpecError(f"--procs-per-task must be at least 1, got {procs}")
    if procs > MAX_PROCS_PER_TASK:
        raise SpecError(PROCS_ABOVE.format(procs=procs))
    if procs > 1 and framework != "pytorch":
        raise SpecError(
            f"--procs-per-task is for PyTorch jobs (torchrun's --nproc-per-node); a {name} job "
            "runs one process per task: use --workers N instead"
        )
    check_elastic(job, tasks)
    for t in tasks:
        if t.gpus and procs > t.gpus:
            raise SpecError(
                f"--procs-per-task {procs} is above the {t.gpus} GPU(s) each {t.type} task asks "
                f"for: each process drives one GPU (its LOCAL_RANK); ask for --gpus {procs}, or "
                f"--procs-per-task {t.gpus}"
            )


def check_elastic(job: Job, tasks: Sequence[Task]) -> None:
    """--workers MIN:MAX: PyTorch's elastic agent, workers only, no whole-job restarts."""
    low = job.min_workers
    if not low:
        return
    framework = job.framework
    high = sum(t.instances for t in tasks if t.type == "worker")
    if framework != "pytorch":
        raise SpecError(
            f"--workers {low}:{high}: elastic jobs run under PyTorch's elastic agent (torchrun's "
            f"c10d rendezvous); a {NAMES[framework]} job has a fixed set of tasks: add "
            f"--framework pytorch, or use --workers {high}"
        )
    if any(t.type == "chief" for t in tasks):
        raise SpecError(
            f"--workers {low}:{high} with --chief: in an elastic job the rendezvous gives out "
            "the ranks (rank 0 included) among the workers; drop --chief"
        )
    if job.max_attempts > 1:
        raise SpecError(
            f"--workers {low}:{high}: an elastic job replaces a lost worker itself instead of "
            "restarting the whole job; drop --max-attempts (tony.application.num-retries)"
        )


def missing_modules(framework: str, find_spec) -> tuple[list[str], str]:
    """The framework's modules that ``find_spec`` does not find, and the pip argument that
    installs them."""
    modules, pip_name = MODULES.get(framework, ((), ""))
    return [m for m in modules if find_spec(m) is None], pip_name
