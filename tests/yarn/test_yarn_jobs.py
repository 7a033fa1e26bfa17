"""The backend contract on YARN: the same checks as tests/test_magics.py, re-run with jobs
going to the devcluster (HADOOP_CONF_DIR set makes yarn the default backend). Only the
``tony_home`` fixture differs: it points at the devcluster and, afterwards, asserts that no
application, container or staging directory of the test is left."""

import pytest
from test_magics import (  # noqa: F401 - re-run here against YARN
    test_async_returns_at_once_and_result_pulls_later,
    test_bad_input_is_a_usage_error_and_submits_nothing,
    test_cell_runs_on_every_task_with_tf_config_and_tony_env,
    test_crashed_parameter_server_ends_the_job,
    test_failing_worker_raises_with_remote_traceback,
    test_hung_worker_is_caught_by_missed_heartbeats,
    test_keras3_opt_out_leaves_tf_use_legacy_keras_unset,
    test_line_magics_list_status_logs_kill_attach,
    test_registration_timeout_ends_the_job,
    test_run_script_passes_argv,
    test_worker_waiting_after_chief_is_stopped,
)
from yarn_helpers import yarn_cluster_fixture, yarn_home  # noqa: F401

pytestmark = pytest.mark.yarn

tony_home = pytest.fixture(yarn_home)
