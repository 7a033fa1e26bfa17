"""The core of the YARN tests against devclusters of other Hadoop releases
(dev/test-hadoop-versions runs this).

Each configuration gets its own devcluster in its own dir (ROOT-LABEL), on a port offset that
no running cluster uses, started with `devcluster up --hadoop-version`, one at a time: the plain
tests run against it, then it stops and a secure one (`up --secure`, the same token lifetimes as
tests/secure) runs the secure basics. A configuration CLUSTER:CLIENT runs the applications (the
AM's JPype client) on CLIENT's jars against a CLUSTER devcluster. Prints a table and writes
build/hadoop-versions.json; exits 1 unless every test passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tony_jupyter_devcluster import maven, preflight
from tony_jupyter_devcluster.config import MAX_PORT_OFFSET, Layout
from tony_jupyter_devcluster.errors import DevClusterError

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "hadoop-versions"
# submit and kill, placement by resource type and label, MWMS, a worker fault and a lost AM
# resumed from the checkpoint (YARN's next attempt), a warm session, history; then the secure
# basics (tokens only, a user's kill).
PLAIN = (
    "tests/yarn/test_yarn_backend.py::test_kill_ends_the_application_killed_with_no_container_left",
    "tests/yarn/test_yarn_backend.py::test_gpu_worker_lands_on_the_gpu_node_and_ps_on_the_plain_one",
    "tests/yarn/test_yarn_training.py::"
    "test_mwms_two_workers_train_in_yarn_containers_of_the_asked_size",
    "tests/yarn/test_yarn_fault_tolerance.py::test_fault_on_yarn_resumes_from_checkpoint"
    "[kill-9-worker]",
    "tests/yarn/test_yarn_fault_tolerance.py::test_fault_on_yarn_resumes_from_checkpoint"
    "[kill-9-am]",
    "tests/test_session.py::test_state_is_kept_between_cells_and_training_goes_on[yarn]",
    "tests/yarn/test_yarn_history.py::test_a_job_is_listed_opened_and_read_from_another_home",
)
SECURE = (
    "tests/secure/test_secure_jobs.py::test_mwms_trains_as_alice_with_tokens_only",
    "tests/secure/test_secure_jobs.py::test_alice_kills_her_job",
)
SECURE_FLAGS = ("--secure", "--token-renew-interval", "20", "--token-max-lifetime", "60")


def free_offset(root: Path, secure: bool) -> int:
    """The first offset from 30000 whose ports are all free (0-20000: the tests' fixtures)."""
    for offset in range(30000, MAX_PORT_OFFSET + 1, 5000):
        if not any(preflight.port_in_use(p) for p in Layout(root, offset, secure).all_ports()):
            return offset
    raise SystemExit("no free port offset for a devcluster on this machine")


def devcluster(args: list[str], env: dict, log: Path, timeout: float) -> tuple[int, float]:
    start = time.monotonic()
    cmd = [sys.executable, "-m", "tony_jupyter_devcluster", *args]
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        try:
            rc = subprocess.run(cmd, env=env, stdout=out, stderr=out, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.monotonic() - start


def outcomes(junit: Path, node_ids: tuple[str, ...]) -> dict[str, dict]:
    """Each asked test's outcome (passed/failed/error/skipped/not run) and seconds."""
    found: dict[str, dict] = {}
    if junit.is_file():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome, message = "passed", ""
            for kind in ("failure", "error", "skipped"):
                el = case.find(kind)
                if el is not None:
                    outcome = {"failure": "failed"}.get(kind, kind)
                    message = (el.get("message") or "")[:300]
            entry = {"outcome": outcome, "seconds": round(float(case.get("time", 0)), 1)}
            if message:
                entry["message"] = message
            found[case.get("name", "")] = entry
    return {n: found.get(n.split("::")[-1], {"outcome": "not run"}) for n in node_ids}


def run_phase(
    label: str, version: str, client: str | None, secure: bool, opts: argparse.Namespace
) -> dict:
    """Start a devcluster, run the phase's tests against it, stop it."""
    phase = "secure" if secure else "plain"
    node_ids = tuple(n for n in (SECURE if secure else PLAIN) if opts.only in n)
    root = Path(f"{opts.root}-{label}{'-secure' if secure else ''}")
    shutil.rmtree(root, ignore_errors=True)
    log, junit = OUT / f"{label}-{phase}.log", OUT / f"{label}-{phase}.xml"
    log.unlink(missing_ok=True)
    junit.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TONY_JUPYTER_DEVCLUSTER_")}
    env.pop("TONY_TEST_SECURE_DIR", None)
    if client:
        env[maven.CLIENT_VERSION_ENV] = client
    offset = free_offset(root, secure)
    up = ["up", "--dir", str(root), "--hadoop-version", version, "--port-offset", str(offset)]
    rc, up_s = devcluster([*up, *(SECURE_FLAGS if secure else ())], env, log, opts.up_timeout)
    result: dict = {"dir": str(root), "port_offset": offset, "up_rc": rc, "up_s": round(up_s, 1)}
    try:
        if rc != 0:
            result["tests"] = {n: {"outcome": "not run (up failed)"} for n in node_ids}
            return result
        if secure:
            env["TONY_TEST_SECURE_DIR"] = str(root)
        else:
            env["TONY_JUPYTER_DEVCLUSTER_DIR"] = str(root)
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *node_ids]
        cmd.append(f"--junitxml={junit}")
        start = time.monotonic()
        with open(log, "a") as out:
            try:
                subprocess.run(cmd, env=env, cwd=REPO, stdout=out, stderr=out, timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                out.write(f"\npytest ran past {opts.timeout} s and was stopped\n")
        result["pytest_s"] = round(time.monotonic() - start, 1)
        result["tests"] = outcomes(junit, node_ids)
        return result
    finally:
        devcluster(["down", "--dir", str(root)], env, log, 300)


def parse_config(text: str) -> tuple[str, str, str | None]:
    version, _, client = text.partition(":")
    maven.check_version(version)
    if client:
        maven.check_version(client)
    return (f"{version}-client-{client}" if client else version), version, client or None


def print_table(results: dict) -> None:
    labels = list(results)
    tests = [t for r in results.values() for ph in r["phases"].values() for t in ph["tests"]]
    tests = list(dict.fromkeys(tests))
    width = max(len(t.split("::")[-1]) for t in tests)
    print(f"{'test':<{width}}  " + "  ".join(f"{label:<20}" for label in labels))
    for phase in ("plain", "secure"):
        ups = [results[lb]["phases"].get(phase, {}) for lb in labels]
        cells = [f"rc {u['up_rc']}, {u['up_s']} s" if u else "-" for u in ups]
        print(f"{'(up ' + phase + ')':<{width}}  " + "  ".join(f"{c:<20}" for c in cells))
    for test in tests:
        cells = []
        for label in labels:
            entry = {}
            for ph in results[label]["phases"].values():
                entry = ph["tests"].get(test, entry)
            seconds = f" {entry['seconds']} s" if "seconds" in entry else ""
            cells.append(f"{entry.get('outcome', '-')}{seconds}")
        print(f"{test.split('::')[-1]:<{width}}  " + "  ".join(f"{c:<20}" for c in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "configs",
        nargs="*",
        default=["3.4.3", "3.3.6", f"3.3.6:{maven.HADOOP_VERSION}"],
        metavar="VERSION[:CLIENT]",
        help=f"Hadoop releases (default 3.4.3, 3.3.6 and 3.3.6:{maven.HADOOP_VERSION})",
    )
    parser.add_argument("--no-secure", action="store_true", help="skip the secure basics")
    parser.add_argument("--only", default="", help="only the tests whose node id has this")
    parser.add_argument("--root", default="/tmp/dc-hv", help="cluster dirs: ROOT-LABEL")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per pytest run")
    parser.add_argument("--up-timeout", type=float, default=1500, help="seconds per `up`")
    opts = parser.parse_args()
    try:
        configs = [parse_config(c) for c in opts.configs]
    except DevClusterError as err:
        parser.error(str(err))
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    for label, version, client in configs:
        print(f"== Hadoop {version}" + (f", applications on {client}'s client" if client else ""))
        entry = {"hadoop": version, "client": client or version, "phases": {}}
        results[label] = entry
        for secure in (False, True):
            if (secure and opts.no_secure) or not [
                n for n in (SECURE if secure else PLAIN) if opts.only in n
            ]:
                continue
            phase = run_phase(label, version, client, secure, opts)
            entry["phases"]["secure" if secure else "plain"] = phase
            print(json.dumps({label: phase}, indent=1), flush=True)
    (REPO / "build" / "hadoop-versions.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    bad = [
        t
        for r in results.values()
        for ph in r["phases"].values()
        for t in ph["tests"].values()
        if t["outcome"] != "passed"
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
