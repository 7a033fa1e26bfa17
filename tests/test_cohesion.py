"""dev/cohesion.py, dev/lint's cohesion rule: it fails a module that does not name its
responsibility, warns (and passes) for a long one, and passes the package as it is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cohesion():
    spec = importlib.util.spec_from_file_location("cohesion", ROOT / "dev" / "cohesion.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_module_without_a_named_responsibility_fails(tmp_path, capsys):
    cohesion = _cohesion()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")  # empty: nothing to name
    (pkg / "good.py").write_text('"""Retries: how often a call is tried again."""\nX = 1\n')
    assert cohesion.main([str(pkg)]) == 0
    (pkg / "nodoc.py").write_text("X = 1\n")
    (pkg / "vague.py").write_text('"""Helpers."""\nX = 1\n')
    assert cohesion.main([str(pkg)]) == 1
    out = capsys.readouterr().out
    assert f"{pkg / 'nodoc.py'}: no docstring naming its responsibility" in out
    assert f"{pkg / 'vague.py'}: its docstring's first line ('Helpers.') names no" in out
    assert "good.py" not in out and "__init__" not in out


def test_a_long_module_is_a_warning_not_a_failure(tmp_path, capsys):
    cohesion = _cohesion()
    long = tmp_path / "long.py"
    long.write_text('"""One thing, at length: a long table."""\n' + "X = 1\n" * 1000)
    assert cohesion.main([str(tmp_path)]) == 0
    assert "warning: " in capsys.readouterr().out and "1001 lines (over 900)" in str(
        cohesion.problems(long)[1]
    )


def test_the_package_names_every_responsibility():
    assert _cohesion().main([str(ROOT / "tony_jupyter")]) == 0
