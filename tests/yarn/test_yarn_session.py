"""Interactive sessions on YARN: the same tests as tests/test_session.py, the session being one
YARN application (the yarn ``tony_home`` also asserts no application or staging is left)."""

import pytest
from test_session import (  # noqa: F401 - re-run here against YARN
    session_shell,
    test_cell_log_and_names_from_the_notebook,
    test_interrupt_returns_control_and_the_session_goes_on,
    test_state_is_kept_between_cells_and_training_goes_on,
)
from yarn_helpers import yarn_cluster_fixture, yarn_home  # noqa: F401

pytestmark = pytest.mark.yarn

tony_home = pytest.fixture(yarn_home)
