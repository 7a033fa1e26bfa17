"""pyproject.toml's import contracts leave no import cycle unseen: acyclic_siblings over the
whole package, imports under TYPE_CHECKING counted, and, since it cannot see a cycle through a
package's own __init__, a contract per package that keeps its __init__ out of reach of its
modules. A package added without that contract would leave the gap open. The same holds for
the devcluster's package (devcluster/, its own distribution), which the package never imports."""

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
    assert [c["ancestors"] for c in acyclic] == [["tony_jupyter", "tony_jupyter_devcluster"]]
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
        ".".join(p.parent.relative_to(base).parts)
        for base, top in ((ROOT, "tony_jupyter"), (ROOT / "devcluster", "tony_jupyter_devcluster"))
        for p in (base / top).rglob("__init__.py")
        if "labextension" not in p.parts
    }
    assert {"tony_jupyter.am.yarn", "tony_jupyter_devcluster"} <= packages
    assert packages - guarded == set(), "add a contract for each (see pyproject.toml)"


def test_the_package_and_the_devcluster_are_kept_apart():
    config, all_contracts = contracts()
    assert config["root_packages"] == ["tony_jupyter", "tony_jupyter_devcluster"]
    forbidden = {
        (tuple(c["source_modules"]), tuple(c["forbidden_modules"])): c.get("ignore_imports", [])
        for c in all_contracts
        if c["type"] == "forbidden"
    }
    assert forbidden[("tony_jupyter",), ("tony_jupyter_devcluster",)] == []
    # the devcluster may import these public modules of the package, and nothing else of it
    allowed = forbidden[("tony_jupyter_devcluster",), ("tony_jupyter",)]
    assert allowed == [
        "tony_jupyter_devcluster.** -> tony_jupyter.core.supervise",
        "tony_jupyter_devcluster.** -> tony_jupyter.core.jpms",
    ]
