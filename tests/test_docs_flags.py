"""Every flag and command that a page of the docs, the README or a string of the package names
exists: a `--flag` is one of our parsers' (or another program's, listed in FOREIGN with whose);
`%tony X`, `tony-jupyter X` and `tony-jupyter devcluster X` name real commands, and the flags
written after one are that command's. This is what caught `--env` (README, doctor's MLflow fix),
which %%tony never had."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers.docs import ROOT, pages, reference

from tony_jupyter import magics
from tony_jupyter.options import job_parser

ref = reference()
PACKAGE = ROOT / "tony_jupyter"
DEVCLUSTER = ROOT / "devcluster" / "tony_jupyter_devcluster"  # its own distribution

# Flags of other programs that our pages and strings name, each with the program.
FOREIGN = {
    "--fast": "bash dev/test (dev/suite.py's tiers)",
    "--full": "bash dev/test (dev/suite.py's tiers)",
    "--add-opens": "java",
    "--enable-native-access": "java",
    "--glob": "Hadoop's classpath command",
    "--advertise": "python -m tony_jupyter.am (internal)",
    "--provider": "python -m tony_jupyter.am (internal)",
    "--spare": "python -m tony_jupyter.am (internal)",
    "--spare-yarn": "python -m tony_jupyter.am / tony_jupyter.executor (internal)",
    "--bind": "mount",
    "--move": "mount",
    "--propagation": "unshare",
    "--mount": "unshare",
    "--uts": "unshare",
    "--forceactive": "hdfs haadmin",
    "--negotiate": "curl",
    "--enable-shared": "CPython's configure (a shared-library build)",
    "--format": "nvidia-smi",
    "--query-gpu": "nvidia-smi",
    "--logdir": "tensorboard",
    "--load_fast": "tensorboard",
    "--reload_interval": "tensorboard",
    "--port": "tensorboard, mlflow server",
    "--nnodes": "torchrun",
    "--nproc-per-node": "torchrun",
    "--max-restarts": "torchrun",
    "--rdzv-endpoint": "torchrun",
    "--src_dir": "TonY's client",
    "--dport": "iptables",
    "--ctstate": "iptables",
    "--runs": "dev/hosts_figures.py",
    "--keep-going": "sphinx-build",
    "--help": "every command",
}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
# A command as it is written: what follows it up to the end of its code span or line.
INVOCATION = re.compile(r"(%%tony|%tony|tony-jupyter)\b([^`\n\"']*)")


def _commands():
    job = set(ref.parser_flags(job_parser()))
    session = {f for f, _, _ in magics.SESSION_FLAGS}
    cli = ref.cli_commands()
    return job, session, cli


JOB, SESSION, CLI = _commands()
OURS = JOB | SESSION | {f for flags in CLI.values() for f in flags}


def flags_of(command: str, rest: str) -> tuple[str, set[str]] | None:
    """The command a written invocation names and the flags it takes; None when the words
    after it are not a command (`tony-jupyter` as the project's name)."""
    words = rest.split()
    if command == "%%tony":
        return "%%tony", JOB
    if not words:
        return None
    sub = words[0]
    if command == "%tony":
        if sub == "session" and words[1:2] == ["start"]:
            return "%tony session start", JOB | SESSION
        if sub in ("run",):
            return f"%tony {sub}", JOB
        if sub == "doctor":
            return "%tony doctor", set(CLI["doctor"])
        return f"%tony {sub}", set()
    if sub == "devcluster" and len(words) > 1 and not words[1].startswith("-"):
        return f"tony-jupyter devcluster {words[1]}", set(CLI.get(f"devcluster {words[1]}", ()))
    return f"tony-jupyter {sub}", set(CLI.get(sub, ()))


CODE_SPAN = re.compile(r"`([^`]+)`")
WORD = re.compile(r"[a-z][a-z-]*")


def check_text(text: str, where: str, code: bool = False) -> list[str]:
    """What ``text`` names that does not exist. Commands are looked at in code only (the whole
    text with ``code``, else its `code spans`): in prose, tony-jupyter is the project's name."""
    bad = []
    for flag in FLAG.findall(text):
        if flag not in OURS and flag not in FOREIGN:
            bad.append(f"{where}: {flag} is no flag of tony-jupyter's (nor listed in FOREIGN)")
    for span in [text] if code else CODE_SPAN.findall(text.replace("``", "`")):
        bad += _check_commands(span, where)
    return bad


def _check_commands(text: str, where: str) -> list[str]:
    bad = []
    for m in INVOCATION.finditer(text):
        command, rest = m.group(1), m.group(2)
        named = flags_of(command, rest)
        if named is None:
            continue
        name, takes = named
        sub = name.split()[-1] if name != "%%tony" else ""
        if name.startswith("%tony ") and sub not in magics.NAMES and len(name.split()) == 2:
            if WORD.fullmatch(sub):
                bad.append(f"{where}: %tony {sub} is no %tony command")
            continue
        if name.startswith("tony-jupyter devcluster "):
            if f"devcluster {sub}" not in CLI and WORD.fullmatch(sub):
                bad.append(f"{where}: tony-jupyter devcluster {sub} is no devcluster command")
                continue
        elif name.startswith("tony-jupyter ") and sub not in CLI:
            if WORD.fullmatch(sub):
                bad.append(f"{where}: tony-jupyter {sub} is no tony-jupyter command")
            continue
        for word in re.split(r"\s+", rest):
            if word in ("--", "|", ";", "&&", "#") or word.startswith(("#", "(", ")")):
                break  # the script's arguments, or another command
            flag = FLAG.match(word.split("=")[0])
            if flag and flag.group() != word.split("=")[0]:
                continue
            if flag and flag.group() not in takes | {"--help"}:
                bad.append(f"{where}: {name} has no {flag.group()}")
    return bad


def package_strings() -> list[tuple[str, str]]:
    """Every string constant of the package and of the devcluster (f-strings' literal parts
    included), with where."""
    out = []
    for path in [*sorted(PACKAGE.rglob("*.py")), *sorted(DEVCLUSTER.rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_names_only_flags_and_commands_that_exist(page: Path):
    bad, fence = [], ""
    for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(("```", "~~~")):
            fence = "" if fence and line.startswith(fence) else fence or line[:3]
            continue
        bad += check_text(line, f"{page.name}:{i}", code=bool(fence))
    assert not bad, "\n".join(bad)


def test_what_the_package_prints_names_only_flags_and_commands_that_exist():
    strings = package_strings()
    assert len(strings) > 1000  # the whole package was read
    bad = [b for where, s in strings for b in check_text(s, where)]
    assert check_text("fix: `tony-jupyter doctor --queue q`", "x") == []
    assert not bad, "\n".join(bad)


def test_every_foreign_flag_is_still_named_somewhere():
    """FOREIGN lists no flag that nothing names any more (and none of ours)."""
    named = {f for p in pages() for f in FLAG.findall(p.read_text(encoding="utf-8"))}
    named |= {f for _, s in package_strings() for f in FLAG.findall(s)}
    assert not set(FOREIGN) & (OURS - {"--help"})
    assert set(FOREIGN) - named - {"--help"} == set()


def test_the_check_catches_a_flag_and_a_command_that_do_not_exist():
    assert check_text("pass it with `--env NAME=VALUE`", "x")
    assert check_text("%%tony --workers 2 --env A=1", "x")
    assert check_text("%%tony --workers 2 --nnodes 2", "x", code=True)  # torchrun's, not ours
    assert check_text("`tony-jupyter doctor --queue q --workers 2`", "x")
    assert check_text("`%tony attach-all`", "x")
    assert check_text("`tony-jupyter devcluster reboot`", "x")
    assert not check_text("`%%tony --workers 2 --pack-env` and `%tony run t.py --gpus 1`", "x")
    assert not check_text("`%tony session start --workers 2 --idle-timeout 60 --detach`", "x")
    assert not check_text("`tony-jupyter devcluster up --secure --hosts`", "x")


PY_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
WHERE = (ROOT, ROOT / "tony_jupyter", ROOT / "devcluster", ROOT / "tests", ROOT / "dev")
# Files of the user's that pages name as examples, not modules of ours.
USERS_FILES = {
    "train.py",
    "scripts/train.py",
    "jupyter_server_config.py",
    "mnist_distributed.py",  # TonY's example, which tests/test_examples.py reads from shared/
    "tony-examples/mnist-pytorch/mnist_distributed.py",
}


def _missing_modules(text: str) -> list[str]:
    """The `.py` files a text names (a/b.py, as from the package, the checkout, devcluster/,
    tests/ or dev/) that none of those has; a bare name (cell.py) is any file of that name."""
    missing = []
    for path in PY_PATH.findall(text):
        if path in USERS_FILES:
            continue
        if "/" in path:
            found = any((base / path).is_file() for base in WHERE)
        else:
            found = (
                any(next(base.rglob(path), None) for base in WHERE[1:]) or (ROOT / path).is_file()
            )
        if not found:
            missing.append(path)
    return missing


@pytest.mark.parametrize(
    "page",
    [*pages(), ROOT / "labextension/schema/protocol.schema.json"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_modules_a_page_names_exist(page: Path):
    """A page (and the labextension's schema, whose descriptions cite the Python side) names
    only modules that exist: the schema cited launcher/coordinator.py long after it moved."""
    missing = _missing_modules(page.read_text(encoding="utf-8"))
    assert not missing, f"{page.name} names modules that do not exist: {sorted(set(missing))}"


def test_the_readmes_flag_table_is_the_settings_marked_for_it():
    """README's "The flags used most" lists exactly the flags settings.py marks ``readme``,
    each a flag of the parser; a flag added to or dropped from one is caught here."""
    from tony_jupyter.core.settings import FLAGS

    text = (ROOT / "README.md").read_text()
    section = text.split("## The flags used most", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {f for row in rows for f in FLAG.findall(row.split(" | ")[0])}
    marked = {s.name for s in FLAGS if s.readme}
    assert len(rows) >= 10
    assert listed == marked, (listed - marked, marked - listed)
    assert listed <= JOB
