"""Checks of --shard: each task writes what it saw (REPORT) to ``out``; the parts must
partition the rows."""

import json

REPORT = """
import json, os, pathlib
task = os.environ["TONY_TASK_ID"]
pathlib.Path(out, task.replace(":", "-") + ".json").write_text(json.dumps(seen))
"""


def reports(out):
    return {p.stem.replace("-", ":"): json.loads(p.read_text()) for p in out.glob("*.json")}


def assert_partition(parts: list[list[int]], n: int, slack: int = 1):
    flat = [i for p in parts for i in p]
    assert sorted(flat) == list(range(n)), "shards must cover every row exactly once"
    assert len(flat) == len(set(flat)), "shards must be disjoint"
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= slack, sizes
