"""Tests marked ``ha`` run against `devcluster up --ha` (two NameNodes, two ResourceManagers,
ZooKeeper); they run only when asked for (``-m ha``), serially, since they kill masters.

One HA cluster for the module that asks for it (``ha_cluster``), first over HTTP, then HTTPS
only (`up --ha --tls`), in pytest's tmp dir on the first free port offset, beside the plain
devcluster of the tests marked ``yarn``; ``TONY_TEST_HA_DIR`` points the tests at an HA
devcluster already up (developers' runs: the shape it is), which is left running. The Kerberized
shape (`up --ha --secure`) has a module of its own, test_ha_secure.py, with its own cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tony_jupyter.devcluster import DevCluster
from tony_jupyter.devcluster.testing import start_devcluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "ha" in (config.getoption("markexpr") or "").split():
        return
    skip = pytest.mark.skip(reason="kills the masters of its own HA devcluster: run with -m ha")
    for item in items:
        if "ha" in item.keywords:
            item.add_marker(skip)


# Each test runs on both shapes: plain HTTP, and HTTPS only (`up --ha --tls`), where every
# master of a pair is found and followed at its HTTPS address, verified against the CA.
SHAPES = {"http": False, "tls": True}


@pytest.fixture(scope="module", params=list(SHAPES))
def ha_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevCluster]:
    tls_on = SHAPES[request.param]
    root = os.environ.get("TONY_TEST_HA_DIR")
    if root:
        dc = DevCluster(Path(root))
        assert dc.layout.ha and dc.is_running(), f"no HA devcluster runs in {root}"
        if dc.layout.tls != tls_on or dc.security is not None:
            pytest.skip(f"the HA devcluster in {root} is not the {request.param} one")
        yield dc
        return
    dc = start_devcluster(tmp_path_factory.mktemp("ha-devcluster"), tls_on=tls_on, ha=True)
    try:
        yield dc
    finally:
        dc.down()
    # `down` stops every daemon of the pairs, ZooKeeper included: none names the dir any more.
    left = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(dc.dir) in " ".join(p.info["cmdline"] or [])
    ]
    assert not left, f"left running after down: {left}"
