"""pyproject.toml's import contracts leave no import cycle unseen: acyclic_siblings over the
whole package, imports under TYPE_CHECKING counted, and, since it cannot see a cycle through a
package's own __init__, a contract per package that keeps its __init__ out of reach of its
modules. A package added without that contract would leave the gap open."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]


def contracts() -> tuple[dict, list[dict]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return config, config["contracts"]


def test_no_cycle_contract_covers_the_package_with_type_checking_imports():
    config, all_contracts = contracts()
    assert not config.get("exclude_type_checking_imports", False)
    acyclic = [c for c in all_contracts if c["type"] == "acyclic_siblings"]
    assert [c["ancestors"] for c in acyclic] == [["tony_jupyter"]]
    assert not acyclic[0].get("ignore_imports") and not acyclic[0].get("skip_descendants")


def test_every_package_keeps_its_init_out_of_reach_of_its_modules():
    _, all_contracts = contracts()
    guarded = {
        c["forbidden_modules"][0]
        for c in all_contracts
        if c["type"] == "forbidden"
        and c.get("as_packages") is False
        and len(c["forbidden_modules"]) == 1
        and c["source_modules"] == [c["forbidden_modules"][0] + ".**"]
        and not c.get("ignore_imports")
    }
    packages = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "tony_jupyter").rglob("__init__.py")
        if "labextension" not in p.parts
    }
    assert "tony_jupyter.am.yarn" in packages
    assert packages - guarded == set(), "add a contract for each (see pyproject.toml)"
