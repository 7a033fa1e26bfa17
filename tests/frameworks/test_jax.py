"""Multi-process JAX through %%tony --framework jax: jax.distributed.initialize() with no
arguments on two tasks, a psum across the processes and a data-parallel training loop."""

import pytest
from helpers.cells import JAX
from helpers.jobs import wait_no_processes

pytest.importorskip("jax", reason="jax is not installed: pip install -e '.[test]'")

pytestmark = pytest.mark.slow


@pytest.mark.usefixtures("backend")
def test_jax_distributed_on_two_tasks_psums_and_trains(shell, tony_home):
    last = shell.run_cell_magic(
        "tony", "--framework jax --workers 2 --memory 1g --pull losses,seen,same", JAX
    )
    ns = shell.user_ns
    pid, n, total, collectives = ns["seen"]
    # the chief's view: process 0 of 2, and the psum added both processes' values (1 + 2)
    assert (pid, n, total) == (0, 2, 3.0)
    assert collectives == "gloo"  # CPU collectives across processes
    losses = ns["losses"]
    assert last == losses[-1] < losses[0] / 10  # the averaged gradients fit the data
    assert ns["same"] is True  # both processes hold the same weights
    assert wait_no_processes(tony_home) == []


@pytest.mark.usefixtures("backend")
def test_a_jax_session_keeps_its_distributed_state_across_cells(shell, tony_home):
    shell.run_line_magic("tony", "session start --framework jax --workers 2 --no-tensorboard")
    try:
        init = "import jax, jax.numpy as jnp\njax.distributed.initialize()\njax.process_count()"
        assert shell.run_cell_magic("tony", "", init) == 2
        # the next cell finds the distributed state the first one made, and gathers across it
        gather = (
            "from jax.experimental import multihost_utils\n"
            "mine = jnp.array([jax.process_index() + 1.0])\n"
            "float(multihost_utils.process_allgather(mine).sum())"
        )
        assert shell.run_cell_magic("tony", "", gather) == 3.0
        psum = (
            "f = jax.pmap(lambda v: jax.lax.psum(v, 'i'), axis_name='i')\n"
            "(jax.process_index(), float(f(jnp.array([jax.process_index() + 10.0]))[0]))"
        )
        assert shell.run_cell_magic("tony", "", psum) == (0, 21.0)
    finally:
        shell.run_line_magic("tony", "session stop")
    assert wait_no_processes(tony_home) == []
