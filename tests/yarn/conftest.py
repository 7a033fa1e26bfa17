"""Under tests/yarn/ every job goes to the devcluster: ``tony_home`` is overridden (the backend
contract tests run here too, through ``backend``; these are the YARN-only tests)."""

import pytest
from helpers.yarn import jobs_to_yarn


@pytest.fixture
def tony_home(tony_home, monkeypatch, yarn_cluster):
    """conftest's tony_home, with the test's jobs on the devcluster; afterwards no application,
    container or staging directory of the test may be left."""
    for _ in jobs_to_yarn(monkeypatch, yarn_cluster):
        yield tony_home
