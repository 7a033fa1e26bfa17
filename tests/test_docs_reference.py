"""The generated references (docs/_ext/tony_reference.py) against the code they are made from:
every flag of every parser, every command, every TonY key of the configuration table, every
variable of ExecutorEnv, every server setting and every AM route is there; a flag without help
text fails; and the site builds with warnings as errors (bash dev/docs's command)."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys

import pytest
from helpers.docs import DOCS, ROOT, reference

from tony_jupyter import cli, magics
from tony_jupyter.core.errors import SpecError
from tony_jupyter.core.protocol import ExecutorEnv
from tony_jupyter.core.settings import JOB_KEYS, PER_TYPE
from tony_jupyter.core.spec import KNOWN_TYPES, SpecBuilder
from tony_jupyter.core.tonyconf import NOT_APPLICABLE
from tony_jupyter.launcher.doctor import doctor_parser
from tony_jupyter.options import job_parser
from tony_jupyter.server_ext.config import TonyJupyter
from tony_jupyter_devcluster.cli import _parser as devcluster_parser

ref = reference()


def _all_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag but argparse's own -h/--help."""
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    return [s for a in actions for s in a.option_strings]


def test_every_job_flag_is_in_the_magic_reference_with_its_help():
    text = ref.magic_flags()
    parser = job_parser()
    flags = _all_flags(parser)
    assert "--pack-env" in flags and "--keep-staging" in flags and "--queue" in flags
    for action in parser._actions:
        for flag in action.option_strings:
            assert f"`{flag}" in text, flag
        assert ref._cell(action.help) in text, action.option_strings
    from tony_jupyter.core.settings import FLAGS

    for s in FLAGS:  # where each applies, from settings.py's table
        cls = "TaskSpec" if s.scope == "task" else "JobSpec"
        if s.field and s.scope != "run":
            assert f"{s.scope}: `{cls}.{s.field}`" in text, s.name


def test_session_flags_and_commands_are_in_the_reference():
    text = ref.session_flags() + ref.magic_commands()
    for flag, _, what in magics.SESSION_FLAGS:
        assert f"`{flag}" in text and what in text
    for name, _, what in magics.COMMANDS:
        assert f"`%tony {name}" in text and what in text
    assert {"--idle-timeout", "--detach"} == {f for f, _, _ in magics.SESSION_FLAGS}


def test_every_cli_command_and_its_flags_are_in_the_reference():
    text = ref.cli()
    for name, _, what in cli.COMMANDS:
        assert f"`tony-jupyter {name}" in text and what in text
    for flag in _all_flags(doctor_parser()):
        assert f"`{flag}" in text, flag
    parser = devcluster_parser()
    (subs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, sub in subs.choices.items():
        assert f"### `devcluster {name}`" in text, name
        for flag in _all_flags(sub):
            assert f"`{flag}" in text, (name, flag)


def test_the_usage_lines_name_the_parsers_flags():
    """cli.COMMANDS and magics.COMMANDS spell doctor's usage; doctor_parser() declares it."""
    usage = " ".join(
        doctor_parser().format_usage().removeprefix("usage: tony-jupyter doctor ").split()
    )
    for table in (cli.COMMANDS, magics.COMMANDS):
        assert dict((n, a) for n, a, _ in table)["doctor"] == usage
    assert cli.USAGE.splitlines()[0].startswith("usage: tony-jupyter list")


def test_every_configuration_key_is_in_the_reference_and_is_accepted():
    text = ref.configuration()
    keys = ref.conf_keys()
    assert set(JOB_KEYS) <= set(keys)
    for key in [*keys, *NOT_APPLICABLE]:
        parts = key.split(".")
        per_type = len(parts) == 3 and parts[1] in KNOWN_TYPES and parts[2] in PER_TYPE
        key_shown = f"tony.<type>.{parts[2]}" if per_type else key
        assert f"`{key_shown}`" in text, key
        try:  # a bad value may be refused; the key itself never is
            SpecBuilder().apply_conf(key, "1")
        except SpecError as e:
            assert "unknown configuration key" not in str(e), key
    with pytest.raises(SpecError, match="unknown configuration key"):
        SpecBuilder().apply_conf("tony.no.such-key", "1")


def test_every_executor_variable_and_server_setting_is_in_the_reference():
    env = ref.environment()
    for f in dataclasses.fields(ExecutorEnv):
        assert f"`{ExecutorEnv.var(f.name)}`" in env
    settings = ref.server_extension()
    traits = TonyJupyter.class_traits(config=True)
    assert traits
    for name, trait in traits.items():
        assert f"`c.TonyJupyter.{name}`" in settings
        assert ref._cell(trait.help) in settings


def test_every_am_route_is_in_the_http_reference():
    from tony_jupyter.am.api import ROUTES
    from tony_jupyter.am.session_api import ROUTES as SESSION
    from tony_jupyter.am.yarn.warmroutes import ROUTES as SPARE

    text = ref.http_api()
    n = 0
    for path, handler in [*ROUTES, *SESSION, *SPARE]:
        for method, (req, ans) in handler.records.items():
            assert f"`{method} /api/v1/{path}`" in text, (method, path)
            assert f"`{ans.__name__}`" in text
            assert req is not None
            n += 1
    assert n == len(ref.api_routes()) >= 20


def test_a_flag_without_help_fails_the_reference(monkeypatch):
    def helpless(prog: str = "%%tony") -> argparse.ArgumentParser:
        p = job_parser(prog)
        p.add_argument("--undocumented")
        return p

    monkeypatch.setattr("tony_jupyter.options.job_parser", helpless)
    with pytest.raises(ref.MissingHelp, match="--undocumented has no help text"):
        ref.magic_flags()
    bare = argparse.ArgumentParser()
    bare.add_argument("--x", help="  ")
    with pytest.raises(ref.MissingHelp):
        ref.flags_table(bare, "here")


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """What bash dev/docs runs (Sphinx -W -n, then every internal link of the built site)."""
    out = tmp_path / "html"
    build = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q"]
    r = subprocess.run([*build, str(DOCS), str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    links = subprocess.run(
        [sys.executable, str(DOCS / "check_links.py"), str(out)], capture_output=True, text=True
    )
    assert links.returncode == 0, links.stderr
    page = (out / "reference" / "magic.html").read_text()
    assert "--keep-staging" in page and "--idle-timeout" in page


def test_the_screenshots_the_docs_show_are_the_browser_tests():
    """Every {tony-screenshot} of the pages, and the README's picture, is one that
    tests/browser/test_lab.py takes into build/browser/ (its shot(page, NAME) calls)."""
    import re

    taken = set(
        re.findall(r'shot\(page, "([\w-]+)"\)', (ROOT / "tests/browser/test_lab.py").read_text())
    )
    assert "1-widget-tensorboard" in taken
    shown = set()
    for page in DOCS.rglob("*.md"):
        shown |= set(re.findall(r"\{tony-screenshot\} ([\w-]+)", page.read_text()))
    # the README's is kept in the repository (GitHub shows it), under the name the test gives it
    kept = "docs/_static/screenshots"
    readme = re.findall(rf"\]\({kept}/([\w-]+)\.png\)", (ROOT / "README.md").read_text())
    assert readme and shown
    assert all((ROOT / kept / f"{name}.png").is_file() for name in readme)
    assert shown | set(readme) <= taken
    assert taken <= shown  # the docs show every one


def test_each_key_sets_a_field_of_the_spec_and_its_bounds_are_the_parsers():
    """The configuration reference's columns come from settings.py's table: each row names a
    field that exists, and the bounds it shows are the ones SpecBuilder enforces."""
    from tony_jupyter.core.numbers import JAVA_INT_MAX
    from tony_jupyter.core.spec import JobSpec, TaskSpec

    fields = {f"JobSpec.{f.name}" for f in dataclasses.fields(JobSpec)}
    fields |= {f"TaskSpec.{f.name}" for f in dataclasses.fields(TaskSpec)}
    for k in [*JOB_KEYS.values(), *PER_TYPE.values()]:
        if k.how in ref.LIMITS:
            continue
        assert ref.set_field(k) in fields, k
    checked = 0
    for key, k in JOB_KEYS.items():
        if k.kind != "whole":
            continue
        SpecBuilder().apply_conf(key, str(k.minimum))
        with pytest.raises(SpecError, match="at least"):
            SpecBuilder().apply_conf(key, str(k.minimum - 1))
        if k.maximum != JAVA_INT_MAX:
            SpecBuilder().apply_conf(key, str(k.maximum))
            with pytest.raises(SpecError):
                SpecBuilder().apply_conf(key, str(k.maximum + 1))
            assert f"{k.minimum}..{k.maximum}" in ref.configuration()
        checked += 1
    assert checked >= 15


def test_the_error_catalogue_lists_what_the_package_raises():
    text = ref.errors()
    found = ref.error_messages()
    assert len(found) >= 150
    assert {name for name, _, _, _ in found} >= {"SpecError", "BackendError", "UsageError"}
    # one message of each kind, as the source words it
    assert "unknown configuration key {key!r}" in text
    assert "--workers 0: a job needs at least one worker (or --chief)" in text
    assert "\\<" in ref._cell("a <name>") and "`<x>`" in ref._cell("in `<x>`")
