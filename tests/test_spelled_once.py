"""Names spelled once: a job directory's file names in jobdir.py, the executor's variables in
protocol.ExecutorEnv. A second spelling elsewhere in the package fails here."""

import re
from dataclasses import fields
from pathlib import Path

from tony_jupyter.core.protocol import ExecutorEnv

PACKAGE = Path(__file__).parents[1] / "tony_jupyter"
# The names no other word of the package shares ("token", "logs" and "tensorboard" are also
# JSON keys, endpoint and command names: JobDir's tests pin those).
FILE_NAMES = (
    "spec.json env.json status.json history.json events.jsonl metrics.json result.json cell.py "
    "names.pkl bundle.json am.json am.pid am.log yarn.json token.sha256 resources.json src.tar.gz"
).split()


def sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "labextension" not in path.parts:
            yield path, path.read_text()


def test_job_file_names_are_spelled_in_jobdir_only():
    names = "|".join(map(re.escape, FILE_NAMES))
    literal = re.compile(rf"""["']({names})["']""")
    found = [
        f"{path.relative_to(PACKAGE)}: {m.group(0)}"
        for path, text in sources()
        if path.name != "jobdir.py"
        for m in literal.finditer(text)
    ]
    assert found == []


def test_executor_variables_are_spelled_in_executor_env_only():
    ours = {ExecutorEnv.var(f.name) for f in fields(ExecutorEnv)}
    literal = re.compile(r"""["'](TONY_[A-Z_]+)["']""")
    found = [
        f"{path.relative_to(PACKAGE)}: {m.group(1)}"
        for path, text in sources()
        for m in literal.finditer(text)
        if m.group(1) in ours
    ]
    assert found == []
    assert "TONY_TASK_ID" in ours and "TONY_HDFS_TOKEN" in ours  # what is checked is there
