"""Issue 43's regression guard: a YARN job's cell -> user code, cold (a new AM) and warm (the
warm AM's containers), against Hadoop's distributed shell in the same run (``bench
time_to_training``'s sides, 2 workers, A B C rounds, ``--steps 0``: no TensorFlow), may not rise
more than the tolerance above the ratios committed in bench/results/startup_guard.json, which
change only with a note saying why (its ``notes``). The full tier's (tests/tiers.py): about two
minutes of jobs."""

import argparse
import json
from pathlib import Path

import pytest

from bench import time_to_training
from bench.lib.common import Context

pytestmark = [pytest.mark.yarn, pytest.mark.slow]

BASELINE = Path(__file__).resolve().parents[2] / "bench" / "results" / "startup_guard.json"
SIDES = ("tony_yarn", "tony_yarn_warm", "dshell_yarn")
ROUNDS = 3


@pytest.mark.timeout(900)  # the warm AM's spares import TensorFlow before each warm round
def test_cold_and_warm_start_stay_within_their_committed_ratio_to_the_distributed_shell(
    tony_home, yarn_cluster
):
    committed = json.loads(BASELINE.read_text())
    assert committed["notes"], "each change of the committed figures says why"
    args = argparse.Namespace(sizes="2", sides=",".join(SIDES), steps=0)  # no TensorFlow
    got = time_to_training.run(Context(runs=ROUNDS, cluster=yarn_cluster, args=args))["workers"]
    two = got["2"]
    errors = {side: two["median"][side]["errors"] for side in SIDES}
    assert not any(errors.values()), (errors, two["all"])
    figures = {key: two["ratios"][key] for key in committed["ratios"]}
    limit = 1 + committed["tolerance"]
    over = {
        key: f"{figures[key]:.3f} > {committed['ratios'][key]:.3f} x {limit}"
        for key in figures
        if figures[key] > committed["ratios"][key] * limit
    }
    medians = {side: two["median"][side]["to_user_code_s"] for side in SIDES}
    print(f"startup guard: ratios {figures}, medians (s) {medians}, load {two['load']}")
    assert not over, f"start-up slower than committed: {over}; medians (s) {medians}"
