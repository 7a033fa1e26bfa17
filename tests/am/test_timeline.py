"""The YARN AM's start timeline (tony_jupyter/am/timeline.py): stamped lines in a real process's
stderr, read back in order; none outside a YARN container."""

import os
import subprocess
import sys
import time

from tony_jupyter.am import timeline

MARKS = (
    "import time\nfrom tony_jupyter.am import timeline\n"
    "timeline.mark('first step')\ntime.sleep(0.2)\ntimeline.mark('second step')\n"
)


def run(env_extra: dict) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_ID"} | env_extra
    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", MARKS], env=env, capture_output=True, text=True, check=True
    )
    return before, out.stderr


def test_a_yarn_container_marks_each_step_with_the_process_start():
    before, err = run({"CONTAINER_ID": "container_1_0001_01_000001"})
    steps = timeline.parse(err)
    assert list(steps) == ["process", "first step", "second step"], err
    # /proc counts 10 ms ticks: the start is that close to when we started the process.
    assert before - 0.05 <= steps["process"] <= steps["first step"] < steps["second step"]
    assert steps["second step"] - steps["first step"] >= 0.19  # stamps to the ms
    assert all(line.split()[2:4] == ["INFO", "tony-jupyter"] for line in err.splitlines())


def test_no_lines_outside_a_yarn_container():
    _, err = run({})
    assert err == ""
    assert timeline.parse(err) == {}


def test_parse_skips_other_lines_and_keeps_a_steps_first_time():
    text = (
        "2026-11-28 16:44:59,940 INFO client.RMProxy: Connecting to ResourceManager\n"
        f"x INFO {timeline.PREFIX} +0.500 s interpreter up @100.500\n"
        f"x INFO {timeline.PREFIX} +1.000 s interpreter up @101.000\n"
        f"x INFO {timeline.PREFIX} +2.000 s JVM started @not-a-time\n"
    )
    assert timeline.parse(text) == {"process": 100.0, "interpreter up": 100.5}
