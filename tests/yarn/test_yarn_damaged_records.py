"""No damaged history entry on HDFS breaks a command: the local fuzzer's checks, with each
file of two real YARN jobs' history entries (and this home's cached summary of one) damaged on
the devcluster's HDFS, read from a fresh TONY_JUPYTER_HOME each time (as from another host).
Every file is put back after its case."""

from __future__ import annotations

import getpass
import time
import traceback

import pytest
from helpers.damage import Damage, cases
from helpers.yarn import jobs_to_yarn
from test_damaged_records import FAILED_CELL, OK_CELL, SEED, check_case, damage, run_job

from tony_jupyter import commands
from tony_jupyter.launcher.yarn import secure
from tony_jupyter.launcher.yarn.hdfsjobs import history_root

pytestmark = pytest.mark.yarn
BUDGET_S = 300
CACHE = "cache"  # the pseudo-path of this home's cached summary of the entry


@pytest.fixture(scope="module")
def entries(yarn_cluster):
    """Two real YARN jobs (one succeeded, one failed), run once for the module."""
    with pytest.MonkeyPatch.context() as mp:
        for _ in jobs_to_yarn(mp, yarn_cluster):
            ok = run_job("--name healthy", OK_CELL)
            failed = run_job("--name broken", FAILED_CELL)
            yield ok, failed


def entry_files(client, entry: str) -> list[str]:
    return sorted(
        f"{d[len(entry) + 1 :]}/{name}".lstrip("/")
        for d, _, files in client.walk(entry)
        for name in files
    )


def damage_hdfs(client, path: str, case: Damage, original: bytes) -> None:
    if case.kind in ("missing", "directory"):
        client.delete(path)
        if case.kind == "directory":
            client.write(f"{path}/stray", b"x")
    elif case.kind == "unreadable":
        client.set_permission(path, "000")
    else:
        client.write(path, case.content(original), overwrite=True)


def restore(client, path: str, original: bytes) -> None:
    client.delete(path, recursive=True)
    client.write(path, original)


def test_no_damaged_history_entry_breaks_a_command(entries, tmp_path, monkeypatch, yarn_cluster):
    ok, failed = entries
    for k, v in yarn_cluster.env().items():
        monkeypatch.setenv(k, v)
    client = secure.connect().staging.client
    root = history_root(getpass.getuser())
    todo = []
    for victim, other, state in ((ok, failed, "FAILED"), (failed, ok, "SUCCEEDED")):
        files = [*entry_files(client, f"{root}/{victim}"), CACHE]
        todo += [(victim, other, state, c) for c in cases(files, SEED, truncations=1)]
    assert len(todo) >= 100, len(todo)
    deadline = time.monotonic() + BUDGET_S
    broken, tried = [], 0
    for n, (victim, other, other_state, case) in enumerate(todo):
        if time.monotonic() > deadline:
            break
        home = tmp_path / f"home-{n}"  # a fresh one: as from another host
        monkeypatch.setenv("TONY_JUPYTER_HOME", str(home))
        tried += 1
        if case.path == CACHE:
            commands.list_text()  # caches the entries' summaries here
            damage(home / "history", Damage(f"{victim}.json", case.kind, case.seed))
            path, original = None, b""
        else:
            path = f"{root}/{victim}/{case.path}"
            with client.read(path) as f:
                original = f.read()
            damage_hdfs(client, path, case, original)
        try:
            check_case(home, victim, other, other_state, case, "history.json")
        except Exception:  # noqa: BLE001 - every case is tried; all failures are shown
            broken.append(f"{victim} {case}:\n{traceback.format_exc(limit=-4)}")
        finally:
            if path is not None:
                restore(client, path, original)
    print(f"damaged-history fuzz: {tried} of {len(todo)} cases tried, {tried - len(broken)} passed")
    assert not broken, f"{len(broken)} of {tried} cases broke a command:\n" + "\n".join(broken[:8])
    assert tried == len(todo), f"only {tried} of {len(todo)} cases in {BUDGET_S} s"
