"""The test suite's tiers, partitions and areas: what `dev/test` runs, in which order, under which
time limit and with which floor of tests executed; and the path map that picks a change's areas.

Three tiers:
  fast   lint, then the unit and local-backend tests            (before every commit)
  ci     fast, then one of each real part: the browser, a one-host Hadoop with Kerberos
         (two users), an HA cluster through a failover (HTTPS only), several hosts in network
         namespaces with a job from the edge                    (.ci/run, the landing)
  full   every test, and the bench smoke run                    (before a release)
A test marked ``full`` runs in the full tier only (tests/tiers.py says which and what covers it
in CI). ``--area NAME`` runs one area's partitions in full; ``--changed [BASE]`` runs the areas
whose paths a change touches (AREAS below; CONTRIBUTING prints the table, ``areas --table``).

Each partition is one pytest under ``timeout``, writing JUnit XML to build/test-results/; a
partition that exits non-zero, runs past its limit, or executes fewer tests than its floor (a
skipped test is not executed) fails the run, with the reason. ``report`` turns the XML into the
table of partitions, files and slowest tests that CONTRIBUTING quotes.

Usage: python dev/suite.py run TIER | --area NAME [--area NAME ...]  [-- PYTEST ARGS]
       python dev/suite.py areas [--changed BASE] [--table]
       python dev/suite.py report [XML ...]
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "build" / "test-results"
LOGS = ROOT / "build" / "test-logs"
PY = str(ROOT / ".venv" / "bin" / "python")
TIERS = ("fast", "ci", "full")


@dataclass(frozen=True)
class Partition:
    """One pytest run (or the bench smoke run): its selection, and per tier its time limit in
    seconds and the fewest tests it must execute (None: not in that tier). A floor sits a little
    under the count the tier executes (skips do not count: TonY's examples skip without
    $TONY_EXAMPLES_DIR); a change that removes tests lowers it, in the same commit."""

    name: str
    markexpr: str
    paths: tuple[str, ...] = ("tests",)
    limit: dict[str, int] = field(default_factory=dict)
    floor: dict[str, int] = field(default_factory=dict)
    needs_root: bool = False
    command: tuple[str, ...] = ()  # not pytest: a command of its own (bench)
    # pytest-xdist processes, a test file each at a time (--dist loadfile: a module's fixtures
    # stay in one process). The local partition's tests mostly wait on the processes they start:
    # two on 2 cores took it from 766-846 s to 352 s; the yarn partition's wait on YARN too.
    workers: int = 1

    def in_tier(self, tier: str) -> bool:
        return tier in self.limit


PARTITIONS = (
    Partition(
        "lint",
        "",
        limit={"fast": 600, "ci": 600, "full": 600},
        command=("bash", "dev/lint"),
    ),
    Partition(
        "docs",
        "",
        limit={"fast": 300, "ci": 300, "full": 300},
        command=("bash", "dev/docs"),
    ),
    Partition(
        "local",
        "not yarn and not browser and not hosts and not ha",
        limit={"fast": 1500, "ci": 1500, "full": 2400},
        floor={"fast": 1150, "ci": 1150, "full": 1170},
        workers=2,
    ),
    Partition(
        "browser",
        "browser and not yarn",  # a browser test on the devcluster runs in the yarn partition
        ("tests/browser",),
        limit={"ci": 600, "full": 900},
        floor={"ci": 2, "full": 2},
    ),
    Partition(
        "yarn",
        "yarn and not ha and not hosts",
        limit={"ci": 1800, "full": 3600},
        floor={"ci": 85, "full": 130},
        workers=2,  # a devcluster each (devcluster/testing.py: disjoint port offsets)
    ),
    Partition(
        "ha",
        "ha",
        ("tests/ha",),
        limit={"ci": 900, "full": 2400},
        floor={"ci": 5, "full": 16},
    ),
    Partition(
        "hosts",
        "hosts",
        ("tests/hosts",),
        limit={"ci": 1500, "full": 3600},
        floor={"ci": 16, "full": 30},
        needs_root=True,
    ),
    # The bench smoke run (it fails only when a benchmark itself breaks, never on a goal): the
    # full tier's, and the bench area's when bench/ changes (`dev/test --changed`).
    Partition(
        "bench",
        "",
        limit={"full": 900},
        command=(PY, "-m", "bench", "--quick"),
    ),
)


@dataclass(frozen=True)
class Area:
    """Paths whose change asks for these tests in full: pytest selections (markexpr, paths)."""

    name: str
    globs: tuple[str, ...]
    runs: tuple[tuple[str, tuple[str, ...]], ...]
    why: str


AREAS = (
    Area(
        "yarn",
        (
            "tony_jupyter/launcher/yarn/*",
            "tony_jupyter/am/yarn/*",
            "devcluster/tony_jupyter_devcluster/*",
            "tony_jupyter/core/hadoopconf.py",
            "tony_jupyter/core/tokens.py",
            "tests/yarn/*",
            "tests/devcluster/*",
            "tests/helpers/yarn.py",
        ),
        (("yarn and not ha and not hosts", ("tests",)),),
        "the YARN backend, staging on HDFS, the devcluster",
    ),
    Area(
        "secure",
        (
            "tony_jupyter/core/kerberos.py",
            "tony_jupyter/core/tokens.py",
            "tony_jupyter/launcher/yarn/secure.py",
            "tony_jupyter/am/yarn/credentials.py",
            "devcluster/tony_jupyter_devcluster/security.py",
            "devcluster/tony_jupyter_devcluster/kerberos.py",
            "tests/secure/*",
            "tests/helpers/secure.py",
        ),
        (("secure and not ha and not hosts", ("tests",)),),
        "Kerberos, delegation tokens, two users",
    ),
    Area(
        "tls",
        (
            "devcluster/tony_jupyter_devcluster/tls.py",
            "tony_jupyter/launcher/yarn/transport.py",
            "tests/tls/*",
        ),
        (("tls and not ha and not hosts", ("tests",)),),
        "HTTPS-only clusters",
    ),
    Area(
        "ha",
        (
            "tony_jupyter/core/hadoopconf.py",
            "devcluster/tony_jupyter_devcluster/ha.py",
            "devcluster/tony_jupyter_devcluster/failover.py",
            "tests/ha/*",
            "tests/helpers/ha.py",
        ),
        (("ha", ("tests/ha",)),),
        "two NameNodes and two RMs, failovers",
    ),
    Area(
        "hosts",
        (
            "devcluster/tony_jupyter_devcluster/hosts.py",
            "devcluster/tony_jupyter_devcluster/netns.py",
            "devcluster/tony_jupyter_devcluster/hostrun.py",
            "tony_jupyter/launcher/yarn/packenv.py",
            "tony_jupyter/launcher/yarn/venvfiles.py",
            "tony_jupyter/launcher/yarn/editables.py",
            "tony_jupyter/launcher/yarn/interpreter.py",
            "tony_jupyter/launcher/yarn/shipchoice.py",
            "tony_jupyter/launcher/yarn/envcache.py",
            "tony_jupyter/launcher/yarn/appmaster.py",
            "tony_jupyter/launcher/doctor.py",
            "tests/hosts/*",
        ),
        (("hosts", ("tests/hosts",)),),
        "several hosts in network namespaces, the shipped venv",
    ),
    Area(
        "browser",
        (
            "labextension/*",
            "tony_jupyter/server_ext/*",
            "tony_jupyter/widgets/*",
            "tests/browser/*",
        ),
        (("browser", ("tests/browser",)),),
        "JupyterLab, the panel and the widget in Chromium",
    ),
    Area(
        "frameworks",
        (
            "tony_jupyter/core/frameworks.py",
            "tony_jupyter/executor/frameworkenv.py",
            "tony_jupyter/executor/localranks.py",
            "tests/frameworks/*",
        ),
        (("not yarn and not hosts and not ha", ("tests/frameworks",)),),
        "PyTorch and JAX",
    ),
    Area(
        "examples",
        (
            "tony_jupyter/core/tonyconf.py",
            "tony_jupyter/core/settings.py",
            "tony_jupyter/core/spec.py",
            "tests/examples/*",
            "tests/*examples*",
        ),
        (("not hosts and not ha", ("tests/test_examples.py", "tests/yarn/test_yarn_examples.py")),),
        "TonY's examples and tony.xml files ($TONY_EXAMPLES_DIR)",
    ),
    Area(
        "bench",
        ("bench/*",),
        (("", ()),),
        "the benchmarks' smoke run",
    ),
)


def areas_for(paths: list[str]) -> list[str]:
    """The areas whose globs match any of ``paths`` (repo-relative), in AREAS' order."""
    hit = []
    for area in AREAS:
        if any(fnmatch.fnmatch(p, g) for p in paths for g in area.globs):
            hit.append(area.name)
    return hit


def changed_paths(base: str) -> list[str]:
    """Paths changed since ``base`` (committed or not)."""
    out = subprocess.run(
        ["git", "diff", "--name-only", base], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(set(out.split()) | set(untracked.split()))


def executed(xml_path: Path) -> tuple[int, int, int, float]:
    """(executed, skipped, failed, seconds) from a JUnit XML file."""
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = skipped = failed = 0
    seconds = 0.0
    for s in suites:
        tests += int(s.get("tests", 0))
        skipped += int(s.get("skipped", 0))
        failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
        seconds += float(s.get("time", 0))
    return tests - skipped, skipped, failed, seconds


def _markexpr(base: str, tier: str) -> str:
    if tier == "full" or not base:
        return base
    return f"({base}) and not full"


def _run_one(
    label: str, argv: list[str], limit: int, floor: int | None, xml: Path | None, log: Path
) -> tuple[bool, str]:
    """Runs one partition under ``timeout``; (passed, one line saying how it went)."""
    if xml is not None and xml.exists():
        xml.unlink()
    started = time.monotonic()
    with log.open("w") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        # SIGINT first: pytest takes it for Ctrl-C and still tears its clusters down.
        rc = subprocess.call(
            ["timeout", "-s", "INT", "--kill-after=120", str(limit), *argv],
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    took = time.monotonic() - started
    if rc in (124, 137):
        return False, f"{label}: ran past its limit of {limit} s (killed after {took:.0f} s)"
    if xml is None:
        return rc == 0, f"{label}: exit {rc} in {took:.0f} s"
    if not xml.exists():
        return False, f"{label}: exit {rc} in {took:.0f} s and no JUnit XML (pytest did not run)"
    ran, skipped, failed, _ = executed(xml)
    line = f"{label}: exit {rc}, {ran} executed, {skipped} skipped, {failed} failed, {took:.0f} s"
    if floor is not None and ran < floor:
        return False, f"{line}: fewer than its floor of {floor} executed (see the skip reasons)"
    # pytest exits 5 when nothing was collected: the floor above has said so already.
    return rc == 0, line


def _stop_left_behind(basetemp: Path) -> list[str]:
    """Kills what a partition left running in its tmp dir (a devcluster's daemons after a
    pytest killed past its limit): the next partition must not share the cores with it."""
    import psutil

    left = []
    for proc in psutil.process_iter(["cmdline", "name"]):
        try:
            if str(basetemp) in " ".join(proc.info["cmdline"] or []):
                left.append(f"{proc.info['name']}({proc.pid})")
                proc.kill()
        except psutil.Error:
            continue
    return left


def run(tier: str, areas: list[str], extra: list[str]) -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, list[str], int, int | None, Path | None]] = []
    tag = tier if not areas else "area"
    pytest = [PY, "-m", "pytest", "-p", "no:cacheprovider", "--durations=0"]
    if areas:
        for name in areas:
            area = next(a for a in AREAS if a.name == name)
            for i, (expr, paths) in enumerate(area.runs):
                label = f"{name}{i or ''}"
                if not paths:  # the bench: its partition's command and limit
                    bench = next(p for p in PARTITIONS if p.name == "bench")
                    jobs.append((label, list(bench.command), bench.limit["full"], None, None))
                    continue
                xml = RESULTS / f"{tag}-{label}.xml"
                argv = [*pytest, "-m", expr, *paths, f"--junitxml={xml}", *extra]
                jobs.append((label, argv, 3600, 1, xml))
    else:
        for p in PARTITIONS:
            if not p.in_tier(tier):
                continue
            if p.needs_root and os.geteuid() != 0:
                print(f"FAIL {p.name}: needs root (network namespaces); run as root", flush=True)
                return 1
            if p.command:
                jobs.append((p.name, list(p.command), p.limit[tier], None, None))
                continue
            xml = RESULTS / f"{tag}-{p.name}.xml"
            expr = _markexpr(p.markexpr, tier)
            xdist = ["-n", str(p.workers), "--dist", "loadfile"] if p.workers > 1 else []
            argv = [*pytest, *xdist, "-m", expr, *p.paths, f"--junitxml={xml}", *extra]
            jobs.append((p.name, argv, p.limit[tier], p.floor.get(tier), xml))
    ok = True
    summary = []
    npassed = nfailed = 0
    # Each partition's pytest tmp dir (devclusters, the nodes' unpacked venvs: ~11 GB for
    # hosts) is removed when it ends, so runs do not pile up on the disk.
    tmproot = Path(tempfile.mkdtemp(prefix="tony-test."))
    try:
        for label, argv, limit, floor, xml in jobs:
            log = LOGS / f"{tag}-{label}.log"
            print(f"--- {label} (limit {limit} s) -> {log.relative_to(ROOT)}", flush=True)
            if xml is not None:
                argv = [*argv, "--basetemp", str(tmproot / label)]
            passed, line = _run_one(label, argv, limit, floor, xml, log)
            left = _stop_left_behind(tmproot / label)
            if left:  # said, not failed: each test's own check of what it left is the gate
                line += f"; WARNING: left running, killed now: {', '.join(left)}"
            shutil.rmtree(tmproot / label, ignore_errors=True)
            summary.append(("ok  " if passed else "FAIL") + " " + line)
            # what the partition said: all of it when it failed, else its closing lines
            subprocess.call(["tail", "-n", "100000" if not passed else "25", str(log)])
            print(summary[-1], flush=True)
            if xml is not None and xml.exists():
                ran, _, failed, _ = executed(xml)
                npassed += ran - failed
                nfailed += failed
            elif not passed:
                nfailed += 1
            ok = ok and passed
    finally:
        shutil.rmtree(tmproot, ignore_errors=True)
    print("===== partitions =====")
    print("\n".join(summary))
    if "TONY_TEST_STARTED" in os.environ:
        took = time.time() - float(os.environ["TONY_TEST_STARTED"])
        print(f"dev/test {tag}: {'ok' if ok else 'FAILED'} after {took:.0f} s, set-up included")
    print(f"{npassed} passed, {nfailed} failed")
    return 0 if ok else 1


def report(paths: list[Path], slowest: int = 15) -> str:
    """Markdown: per partition its tests and time; per file its time; the slowest tests."""
    lines = ["| partition | executed | skipped | failed | time (s) |", "|---|---|---|---|---|"]
    files: dict[str, float] = {}
    cases: list[tuple[float, str]] = []
    for xml in paths:
        ran, skipped, failed, seconds = executed(xml)
        lines.append(f"| {xml.stem} | {ran} | {skipped} | {failed} | {seconds:.0f} |")
        for case in ET.parse(xml).getroot().iter("testcase"):
            t = float(case.get("time", 0))
            f = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
            files[f] = files.get(f, 0.0) + t
            cases.append((t, f"{case.get('classname')}::{case.get('name')}"))
    lines += ["", "| file | time (s) |", "|---|---|"]
    lines += [f"| {f} | {t:.0f} |" for f, t in sorted(files.items(), key=lambda kv: -kv[1])]
    lines += ["", f"| slowest {slowest} tests | time (s) |", "|---|---|"]
    lines += [f"| {n} | {t:.0f} |" for t, n in sorted(cases, reverse=True)[:slowest]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a tier's partitions, or areas' tests in full")
    r.add_argument("tier", nargs="?", choices=TIERS, default="ci")
    r.add_argument("--area", action="append", default=[], choices=[a.name for a in AREAS])
    r.add_argument("--changed", metavar="BASE", help="the areas changed since BASE, in full")
    r.add_argument("pytest_args", nargs="*", help="after --: passed to every pytest")
    a = sub.add_parser("areas", help="the areas a change touches, or the table of areas")
    a.add_argument("--changed", metavar="BASE", default="origin/main")
    a.add_argument("--table", action="store_true", help="markdown: area, paths, why")
    rep = sub.add_parser("report", help="the durations table from JUnit XML")
    rep.add_argument("xml", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "run":
        areas = list(args.area)
        if args.changed:
            areas += [n for n in areas_for(changed_paths(args.changed)) if n not in areas]
            print(f"areas changed since {args.changed}: {', '.join(areas) or 'none'}")
            if not areas:
                return 0
        return run(args.tier, areas, args.pytest_args)
    if args.cmd == "areas":
        if args.table:
            print("| area | a change to any of these paths | runs |\n|---|---|---|")
            for area in AREAS:
                globs = ", ".join(f"`{g}`" for g in area.globs)
                print(f"| {area.name} | {globs} | {area.why} |")
            return 0
        print("\n".join(areas_for(changed_paths(args.changed))))
        return 0
    xmls = args.xml or sorted(RESULTS.glob("*.xml"), key=lambda p: p.stat().st_mtime)
    print(report(xmls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
