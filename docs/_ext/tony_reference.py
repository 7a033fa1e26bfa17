"""The docs' references, made from the code at build time: ``{tony-reference} NAME`` in a page
becomes the Markdown that ``REFERENCES[NAME]()`` returns, parsed as the page's own MyST.

Each generator reads the one declaration the tool itself runs on (the argument parsers, the
command tables, the configuration key table, ``ExecutorEnv``, the traitlets, the AM's route
tables and their records), so a flag, key, variable, setting or route cannot be added without
appearing here. A flag without help text is an error (:class:`MissingHelp`), which fails the
build (and ``tests/test_docs_reference.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator

MISSING = dataclasses.MISSING


class MissingHelp(Exception):
    """A flag, setting or command declared without the text that says what it does."""


def _cell(text: object) -> str:
    """One Markdown table cell: no line breaks, pipes escaped; outside `code`, no HTML tag or
    emphasis either (``<name>`` in a message is text)."""
    text = " ".join(str(text).split())
    parts = text.split("`")
    if len(parts) % 2 == 0:  # a backtick without its pair: all of it is text
        parts = [text.replace("`", "\\`")]
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([<>*\[\]])", r"\\\1", parts[i])
    return "`".join(parts).replace("|", "\\|")


def _code(text: object) -> str:
    s = json.dumps(text) if isinstance(text, str) and not text else str(text)
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- argparse ---------------------------------------------------------------------------------


def parser_options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The parser's flags (positionals and subparsers aside), in declaration order."""
    for action in parser._actions:  # argparse has no public list of its actions
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            yield action


def parser_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag string the parser accepts (``--no-x`` of a BooleanOptionalAction included)."""
    return [s for a in parser_options(parser) for s in a.option_strings]


def _takes(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices:
        return "{" + ",".join(map(str, action.choices)) + "}"
    meta = action.metavar or action.dest.upper()
    return f"[{meta}]" if action.nargs == "?" else str(meta)


def _flag_rows(parser: argparse.ArgumentParser, where: str) -> list[tuple[str, ...]]:
    rows = []
    for a in parser_options(parser):
        if not (a.help or "").strip():
            raise MissingHelp(f"{where}: {'/'.join(a.option_strings)} has no help text")
        takes = _takes(a)
        flags = ", ".join(_code(f"{s} {takes}".rstrip()) for s in a.option_strings)
        rows.append((flags, a.help % {"prog": parser.prog} if "%(" in a.help else a.help))
    return rows


def _positional_rows(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    rows = []
    for a in parser._actions:
        if a.option_strings or isinstance(a, argparse._SubParsersAction):
            continue
        what = a.help or (f"one of {', '.join(map(str, a.choices))}" if a.choices else "")
        rows.append((_code(a.metavar or a.dest.upper()), what))
    return rows


def flags_table(parser: argparse.ArgumentParser, where: str) -> str:
    return _table(("flag", "what it does"), _flag_rows(parser, where))


# --- %%tony and %tony ------------------------------------------------------------------------


def _applies(s) -> str:
    """Where a flag of settings.py's table applies, and the field it sets."""
    if s.scope == "run":
        return "how the job is run, not its spec"
    if not s.field:
        return s.scope
    cls = "TaskSpec" if s.scope == "task" else "JobSpec"
    return f"{s.scope}: {_code(f'{cls}.{s.field}')}"


def magic_flags() -> str:
    from tony_jupyter.options import job_parser
    from tony_jupyter.core.settings import FLAGS

    parser = job_parser()
    rows = _flag_rows(parser, "%%tony")
    assert len(rows) == len(FLAGS)  # job_parser() is the table's flags, in its order
    applies = [(*row, _applies(s)) for row, s in zip(rows, FLAGS, strict=True)]
    return (
        f"{parser.description}\n\n"
        "`%%tony [flags]` in a cell; the same flags after `%tony run SCRIPT`, "
        "`%tony session start` and `tony-jupyter submit SCRIPT`. Each is a row of `SETTINGS` "
        "in `tony_jupyter/core/settings.py`, which says where it applies: the job (a field of "
        "`JobSpec`), every task (a field of `TaskSpec`), or how the job is run.\n\n"
        + _table(("flag", "what it does", "applies to"), applies)
    )


def session_flags() -> str:
    from tony_jupyter.magics import SESSION_FLAGS

    rows = []
    for flag, meta, what in SESSION_FLAGS:
        if not what.strip():
            raise MissingHelp(f"%tony session start: {flag} has no help text")
        rows.append((_code(f"{flag} {meta}".rstrip()), what))
    return _table(("flag", "what it does"), rows)


def magic_commands() -> str:
    from tony_jupyter.magics import COMMANDS

    rows = [(_code("%%tony [flags]"), "run the cell as a distributed job")]
    for name, args, what in COMMANDS:
        if not what.strip():
            raise MissingHelp(f"%tony {name} has no help text")
        rows.append((_code(f"%tony {name} {args}".rstrip()), what))
    return _table(("command", "what it does"), rows)


# --- tony-jupyter -----------------------------------------------------------------------------


def cli() -> str:
    from tony_jupyter.cli import COMMANDS
    from tony_jupyter.launcher.doctor import doctor_parser
    from tony_jupyter_devcluster.cli import _parser as devcluster_parser

    rows = []
    for name, args, what in COMMANDS:
        if not what.strip():
            raise MissingHelp(f"tony-jupyter {name} has no help text")
        rows.append((_code(f"tony-jupyter {name} {args}".rstrip()), what))
    out = [_table(("command", "what it does"), rows)]
    out += [
        "\n## `tony-jupyter submit`\n",
        "Takes the job flags of `%%tony` ({ref}`the flag table <magic-flags>`) after the script, "
        "and the script's own arguments after `--`.\n",
        "\n## `tony-jupyter doctor`\n",
        doctor_parser().description + "\n\n",
        flags_table(doctor_parser(), "tony-jupyter doctor"),
        "\n## `tony-jupyter devcluster`\n",
    ]
    parser = devcluster_parser()
    out.append(f"{parser.description}\n")
    for name, sub in _subparsers(parser):
        out.append(f"\n### `devcluster {name}`\n\n{_subparser_help(parser, name)}\n\n")
        positionals = _positional_rows(sub)
        if positionals:
            out.append(_table(("argument", "what it is"), positionals) + "\n")
        out.append(flags_table(sub, f"tony-jupyter devcluster {name}"))
    return "".join(out)


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return list(a.choices.items())
    return []


def _subparser_help(parser: argparse.ArgumentParser, name: str) -> str:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for choice in a._choices_actions:
                if choice.dest == name and (choice.help or "").strip():
                    return choice.help
    raise MissingHelp(f"tony-jupyter devcluster {name} has no help text")


def cli_commands() -> dict[str, list[str]]:
    """Each command of the ``tony-jupyter`` tool (devcluster's as ``devcluster NAME``) with the
    flags it takes: what a printed fix may name (tests/test_docs_flags.py)."""
    from tony_jupyter.cli import COMMANDS
    from tony_jupyter.launcher.doctor import doctor_parser
    from tony_jupyter.options import job_parser
    from tony_jupyter_devcluster.cli import _parser as devcluster_parser

    out: dict[str, list[str]] = {name: [] for name, _, _ in COMMANDS}
    out["doctor"] = parser_flags(doctor_parser())
    out["submit"] = parser_flags(job_parser())
    common = parser_flags(devcluster_parser())
    for name, sub in _subparsers(devcluster_parser()):
        out[f"devcluster {name}"] = common + parser_flags(sub)
    return out


# --- TonY configuration keys ------------------------------------------------------------------


def _spec_default(field: str, where: str = "JobSpec") -> object:
    from tony_jupyter.core.spec import JobSpec, TaskSpec

    for cls in {"JobSpec": (JobSpec,), "TaskSpec": (TaskSpec,)}[where]:
        for f in dataclasses.fields(cls):
            if f.name == field and f.default is not MISSING:
                return f.default
    return MISSING


# The settings that end in no field: limits checked as the spec is built.
LIMITS = ("limit",)


def conf_keys() -> list[str]:
    """Every key the configuration table honours (per-type keys for the known task types)."""
    from tony_jupyter.core.settings import JOB_KEYS, PER_TYPE
    from tony_jupyter.core.spec import KNOWN_TYPES

    return [*JOB_KEYS, *(f"tony.{t}.{k}" for t in KNOWN_TYPES for k in PER_TYPE)]


def _reads(k) -> str:
    from tony_jupyter.core.numbers import JAVA_INT_MAX

    if k.kind != "whole":
        return {"memory": "size (2g, 512m; MB bare)", "pairs": "A=1,B=2", "names": "a,b"}.get(
            k.kind, k.kind
        )
    top = "" if k.maximum == JAVA_INT_MAX else str(k.maximum)
    unit = f" {k.unit}" if k.unit else ""
    return f"whole{unit}, {k.minimum}..{top}"


def set_field(k) -> str:
    """The class and field a setting sets: JobSpec.x (job) or TaskSpec.x (task)."""
    return f"{'TaskSpec' if k.scope == 'task' else 'JobSpec'}.{k.field}"


def _sets(k) -> str:
    """The field a key sets and that field's default."""
    if k.how in LIMITS:
        return "(a limit checked as the job is built)"
    cls, _, name = set_field(k).rpartition(".")
    default = _spec_default(name, cls)
    return _code(f"{cls}.{name}") + ("" if default is MISSING else f" = {_code(default)}")


def _conf_rows(keys, prefix: str = "") -> list[tuple[str, ...]]:
    rows = []
    for key, k in keys.items():
        if not k.help.strip():
            raise MissingHelp(f"{prefix}{key} has no help text")
        rows.append((_code(f"{prefix}{key}"), _reads(k), _sets(k), k.help))
    return rows


def configuration() -> str:
    from tony_jupyter.core.settings import JOB_KEYS, PER_TYPE
    from tony_jupyter.core.spec import KNOWN_TYPES
    from tony_jupyter.core.tonyconf import HARMLESS, NOT_APPLICABLE

    header = ("key", "value", "sets (its default)", "what it does")
    ignored = [
        (_code(key), why, ", ".join(_code(v or '""') for v in HARMLESS.get(key, ())))
        for key, why in NOT_APPLICABLE.items()
    ]
    return (
        "Honoured (the rows of `SETTINGS` in `tony_jupyter/core/settings.py`, with the field of "
        "`JobSpec` each sets and that field's default, in the field's own unit):\n\n"
        + _table(header, _conf_rows(JOB_KEYS))
        + f"\nPer task type, for `<type>` one of {', '.join(map(_code, KNOWN_TYPES))} (or a "
        "custom type of lowercase letters, digits and `_`; a parameter server or evaluator "
        "gets no GPU unless asked):\n\n"
        + _table(header, _conf_rows(PER_TYPE, "tony.<type>."))
        + "\nAccepted and ignored, each said once with why (`tony_jupyter/core/tonyconf.py`); the "
        "values in the last column ask for nothing different and are not even said:\n\n"
        + _table(("key", "why it does not apply", "values taken silently"), ignored)
    )


# --- a task's environment ---------------------------------------------------------------------


def _field_comments(cls: type) -> dict[str, str]:
    """The comment at the end of each field's line in the class's source (its only help)."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        m = re.match(r"    (\w+): [^=#]+(?:=[^#]*)?(?:#\s*(.*))?$", line)
        if m:
            out[m.group(1)] = (m.group(2) or "").strip()
    return out


def _type_name(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def environment() -> str:
    from tony_jupyter.core.protocol.env import _VARS, ExecutorEnv
    from tony_jupyter.core.spec import FORWARDED_ENV

    hints = typing.get_type_hints(ExecutorEnv)
    notes = _field_comments(ExecutorEnv)
    rows = []
    for f in dataclasses.fields(ExecutorEnv):
        default = "(required)" if f.default is MISSING else _code(f.default)
        rows.append(
            (_code(ExecutorEnv.var(f.name)), _type_name(hints[f.name]), default, notes[f.name])
        )
    guard = [(_code(var), _code(f"GuardConfig.{name}")) for name, var in _VARS.items()]
    return (
        "Every executor is started with these (`ExecutorEnv` in "
        "`tony_jupyter/core/protocol/env.py`; a `None` default is not set at all; booleans are "
        "`1`/`0`):\n\n"
        + _table(("variable", "type", "default", "what it is"), rows)
        + "\nFrom the notebook's environment, when set there, every task gets "
        + ", ".join(map(_code, FORWARDED_ENV))
        + " (`FORWARDED_ENV` in `tony_jupyter/core/spec.py`); the job's own variables come from "
        "`tony.containers.envs` (`NAME=VALUE,...`), which may not name a `TONY_*` variable.\n\n"
        "The chief's TensorBoard process is started with its guard's secrets "
        "(`GuardConfig`), which it removes from its environment as it reads them:\n\n"
        + _table(("variable", "field"), guard)
    )


# --- the server extension ---------------------------------------------------------------------


def server_extension() -> str:
    from tony_jupyter.server_ext.config import TonyJupyter

    rows = []
    for name, trait in sorted(TonyJupyter.class_traits(config=True).items()):
        if not (trait.help or "").strip():
            raise MissingHelp(f"c.TonyJupyter.{name} has no help text")
        rows.append(
            (
                _code(f"c.TonyJupyter.{name}"),
                type(trait).__name__,
                _code(repr(trait.default_value)),
                trait.help,
            )
        )
    return _table(("setting", "type", "default", "what it does"), rows)


# --- the AM's HTTP API ------------------------------------------------------------------------


def _auth(handler: type) -> str:
    if getattr(handler, "registration_route", False):
        return "the launch's one-time registration secret"
    if getattr(handler, "executor_route", False):
        return "the task's own token (for its own task)"
    if getattr(handler, "task_may_call", False):
        return "the job's token, or a task's own token"
    if handler.__module__.endswith("spare_routes"):
        return "the warm AM's secret"
    return "the job's token"


def _record(cls: type) -> str:
    if not dataclasses.is_dataclass(cls) or not dataclasses.fields(cls):
        return "(none)"
    hints = typing.get_type_hints(cls)
    fields = ", ".join(f"{f.name}: {_type_name(hints[f.name])}" for f in dataclasses.fields(cls))
    return f"`{cls.__name__}` ({fields})"


def api_routes() -> list[tuple[str, str, type, type, type]]:
    """(path, method, handler, request record, answer record) of every AM route."""
    from tony_jupyter.am.api import ROUTES
    from tony_jupyter.am.http import API
    from tony_jupyter.am.session_api import ROUTES as SESSION_ROUTES
    from tony_jupyter.am.yarn.warmroutes import ROUTES as SPARE_ROUTES

    out = []
    for table in (ROUTES, SESSION_ROUTES, SPARE_ROUTES):
        for path, handler in table:
            for method, (req, ans) in handler.records.items():
                out.append((f"{API}/{path}", method, handler, req, ans))
    return out


def http_api() -> str:
    from tony_jupyter.am.session_api import ROUTES as SESSION_ROUTES
    from tony_jupyter.am.yarn.warmroutes import ROUTES as SPARE_ROUTES

    session = {h for _, h in SESSION_ROUTES}
    spare = {h for _, h in SPARE_ROUTES}
    groups: dict[str, list[tuple[str, ...]]] = {"job": [], "session": [], "spare": []}
    for path, method, handler, req, ans in api_routes():
        group = "session" if handler in session else "spare" if handler in spare else "job"
        own = handler.__dict__.get("__doc__") or ""  # not a base class's
        first = inspect.cleandoc(own).split("\n\n")[0]
        groups[group].append(
            (f"`{method} {path}`", _auth(handler), _record(req), _record(ans), first)
        )
    header = ("route", "credential", "request body", "answer", "notes")
    return (
        "Every AM serves these (`ROUTES` in `tony_jupyter/am/api.py`):\n\n"
        + _table(header, groups["job"])
        + "\nA session's AM also serves (`tony_jupyter/am/session_api.py`):\n\n"
        + _table(header, groups["session"])
        + "\nA warm YARN AM, until it is handed its job (`tony_jupyter/am/yarn/warmroutes.py`):"
        "\n\n" + _table(header, groups["spare"])
    )


# --- every error the tool words -------------------------------------------------------------

# What the catalogue lists: the package's own errors (and IPython's UsageError, one red line).
USER_ERRORS = {
    "SpecError": "bad job input, refused before anything is submitted",
    "BundleError": "the cell or a name it needs cannot be shipped",
    "UsageError": "a magic's bad input, one red line",
    "BackendError": "the backend could not start or reach the job",
    "JobNotFoundError": "no such job",
    "DataError": "tony_jupyter.data could not read a dataset",
    "UnsafeFileError": "a file name or archive member that would land outside its place",
    "DamagedRecordError": "a job's record that cannot be read",
    "SessionError": "a %tony session that cannot do what was asked",
    "QuotaError": "an HDFS quota or a full disk",
    "TonyError": "the base of the above",
}


def _template(node) -> str | None:
    """A raised message as its source writes it, ``{...}`` where a value goes; None when it is
    not a string made here."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                conv = "" if v.conversion == -1 else "!" + chr(v.conversion)
                parts.append("{" + ast.unparse(v.value) + conv + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is not None and right is not None:
            return left + right
        if left is not None:
            return left + "{...}"
    return None


def error_messages() -> list[tuple[str, str, int, str]]:
    """(error class, module, line, message template) of every ``raise X("...")`` of the
    package whose class is in USER_ERRORS."""
    import ast
    from pathlib import Path

    import tony_jupyter

    root = Path(tony_jupyter.__file__).parent
    out = []
    for path in sorted(root.rglob("*.py")):
        module = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in USER_ERRORS and node.exc.args:
                text = _template(node.exc.args[0])
                if text:
                    out.append((name, module, node.lineno, " ".join(text.split())))
    return out


def errors() -> str:
    found = error_messages()
    counts = {name: sum(1 for f in found if f[0] == name) for name in USER_ERRORS}
    out = [
        "Every message the package raises to its user, as its source writes it (`{...}` is "
        f"filled in when it is raised): {len(found)} of them, from the `raise` statements of "
        "these classes:\n\n",
        _table(
            ("error", "what it is", "messages"),
            [(_code(n), what, str(counts[n])) for n, what in USER_ERRORS.items() if counts[n]],
        ),
    ]
    modules = sorted({m for _, m, _, _ in found})
    for module in modules:
        rows = [(_code(n), text) for n, m, _, text in found if m == module]
        out.append(f"\n## `{module}`\n\n" + _table(("error", "message"), rows))
    return "".join(out)


REFERENCES: dict[str, Callable[[], str]] = {
    "magic-flags": magic_flags,
    "session-flags": session_flags,
    "magic-commands": magic_commands,
    "cli": cli,
    "configuration": configuration,
    "environment": environment,
    "server-extension": server_extension,
    "http-api": http_api,
    "errors": errors,
}


def setup(app):  # pragma: no cover - run by Sphinx
    from docutils.statemachine import StringList
    from sphinx.errors import ExtensionError
    from sphinx.util.docutils import SphinxDirective

    class Reference(SphinxDirective):
        required_arguments = 1

        def run(self):
            name = self.arguments[0]
            if name not in REFERENCES:
                raise self.error(f"no reference {name!r}; one of {', '.join(REFERENCES)}")
            try:
                text = REFERENCES[name]()
            except MissingHelp as e:
                raise ExtensionError(f"{self.env.docname}: {e}") from None
            from docutils import nodes

            box = nodes.container()
            self.state.nested_parse(StringList(text.splitlines(), "<generated>"), 0, box)
            return box.children

    app.add_directive("tony-reference", Reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
