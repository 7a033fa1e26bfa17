"""Which tests run in the full tier only (``dev/test --full``, ``--area NAME``), not in CI's
landing run, and which cheaper test still covers each in CI. tests/conftest.py marks them
``full``; dev/suite.py deselects ``full`` in the fast and CI tiers.

An entry is a test file, ``file::test`` (every parametrization of it), ``file::test[id]`` (one),
``file::test[!id]`` (every parametrization but one) or ``file::*[id]`` (every test of the file
with that parametrization id).
"""

from __future__ import annotations

FULL_ONLY: dict[str, str] = {
    # --- the one-host devcluster (tests marked yarn) -------------------------------------------
    "tests/tls": "HTTPS only: tests/ha/test_ha_jobs.py's [tls] jobs run on `up --ha --tls` in CI",
    "tests/devcluster/test_devcluster_secure.py": "a second Kerberized cluster: tests/secure's "
    "(KDC, SPNEGO, alice and bob's HDFS and YARN isolation) runs in CI",
    "tests/devcluster/test_devcluster_yarn.py::test_down_leaves_no_process": "a second start "
    "of the plain cluster: its `down` at the end of the yarn partition is the same code",
    "tests/devcluster/test_devcluster_node_crash.py": "the devcluster's node restart, which the "
    "full tier's fault tests use: CI's fault test (tests/secure's worker fault) kills a "
    "container, not a node",
    "tests/secure/test_secure_jobs.py::test_warm_session_outlives_the_tokens_max_lifetime": "a "
    "session past the tokens' 60 s lifetime (74 s): tests/test_tokens.py (the token codec and "
    "renewal) and the other secure jobs, each renewing its tokens every 20 s, run in CI",
    "tests/secure/test_secure_jobs.py::test_parameter_server_training_with_chief_worker_and_ps": (
        "PS training as alice: tests/test_training.py's PS job and test_mwms_trains_as_alice_"
        "with_tokens_only run in CI"
    ),
    "tests/yarn/test_yarn_notebooks.py": "the data notebook on YARN (46 s): tests/test_data_hdfs"
    ".py's [yarn] jobs read HDFS and tests/test_notebooks.py runs the quickstart notebook in CI",
    "tests/yarn/test_yarn_warm.py::test_a_session_is_handed_to_the_warm_am_too": "a session in "
    "the warm AM (46 s): test_the_next_job_of_the_same_shape_trains_in_the_warm_ams_containers "
    "and test_yarn_src_handover.py (a job handed to the warm AM) run in CI",
    "tests/yarn/test_yarn_scale.py": "many workers on one cluster: test_yarn_training.py's "
    "jobs in CI",
    "tests/yarn/test_yarn_damaged_records.py": "the HDFS history fuzz (up to 300 s): "
    "tests/test_damaged_records.py's fuzz of the same readers runs in CI",
    "tests/yarn/test_yarn_fault_tolerance.py": "five kinds of fault on YARN: "
    "tests/test_fault_tolerance.py (local, kill -9 and SIGSTOP) and tests/secure's worker "
    "fault on HDFS checkpoints run in CI",
    "tests/yarn/test_yarn_pack_env.py": "--pack-env on one host: the several-host job from the "
    "edge packs and ships the venv in CI",
    "tests/yarn/test_yarn_cache_replaced.py": "a task overwrites the cached --pack-env archive "
    "on HDFS (four jobs and a venv built): tests/launcher/test_cached_archives.py, the rule over "
    "a fake HDFS client, runs in CI",
    # --- the local backend ----------------------------------------------------------------------
    "tests/launcher/test_warm_frameworks.py::"
    "test_a_job_whose_load_environment_differs_gets_a_fresh_interpreter[!XLA_FLAGS]": "the "
    "rule for each variable: test_the_rule_no_spare_for_a_task_whose_load_variable_differs_or"
    "_that_its_cell_sets (unit); the XLA_FLAGS case runs through real processes in CI",
    "tests/launcher/test_warm_frameworks.py::"
    "test_a_cell_that_sets_a_load_variable_gets_a_fresh_interpreter[!JAX_PLATFORMS]": "the "
    "rule for each variable: the unit test above; the JAX_PLATFORMS case runs in CI",
    "tests/launcher/test_warm_frameworks.py::test_a_warm_job_trains_in_spares_that_imported_its"
    "_framework[!tensorflow--cell0-history,replicas-_check_mwms]": "PyTorch and JAX in warm "
    "spares: the TensorFlow case runs in CI, and tests/frameworks trains PyTorch and JAX there",
    "tests/frameworks/test_elastic.py::test_an_elastic_job_replaces_a_lost_worker_and_finishes": (
        "an elastic PyTorch job through a lost worker (100 s): tests/am/test_elastic_rules.py "
        "(the rules) and tests/test_fault_tolerance.py's lost worker run in CI"
    ),
    "tests/test_notebooks.py::test_notebook_executes[!01-quickstart]": "the other notebooks: "
    "the quickstart's runs in CI, and test_training.py (PS) and test_data_jobs.py (data) train "
    "what they train",
    "tests/test_fault_tolerance.py::test_lost_worker_resumes_from_checkpoint[kill-9]": "the "
    "SIGSTOP case (a worker found lost by its missed heartbeats) runs in CI, and tests/secure's "
    "worker fault",
    "tests/test_mlflow.py::test_a_failing_cell_ends_its_run_failed": "the chief's MLflow run "
    "(test_the_chief_logs_the_job_as_one_mlflow_run) runs in CI",
    "tests/test_docs_reference.py::test_the_site_builds_with_warnings_as_errors": "the docs "
    "partition of every tier runs the same build (bash dev/docs)",
    # --- HA (tests marked ha) ------------------------------------------------------------------
    "tests/ha/test_ha_jobs.py::*[http]": "the HTTP shape of HA: the same tests on "
    "`up --ha --tls` run in CI",
    "tests/ha/test_ha_warm.py": "the warm AM through failovers: tests/ha/test_ha_jobs.py's "
    "RM failover during a job runs in CI",
    "tests/ha/secure": "Kerberized HA (its own cluster): tests/secure (Kerberos) and "
    "tests/ha/test_ha_jobs.py[tls] (failovers) run in CI",
    # --- several hosts (tests marked hosts) ----------------------------------------------------
    "tests/hosts/test_hosts_frameworks.py": "a 2.25 GB torch+JAX node venv: tests/frameworks "
    "(local) and the edge's TensorFlow job run in CI",
    "tests/hosts/test_hosts_mlflow.py": "MLflow's server on the edge: tests/test_mlflow.py "
    "(local, a real file store) runs in CI",
    "tests/hosts/test_hosts_secure.py": "`up --hosts --secure`: tests/secure (one host) and "
    "the plain several-host job run in CI",
    "tests/hosts/test_hosts_tls.py": "`up --hosts --tls`: the HA TLS jobs run in CI",
    "tests/hosts/test_hosts_ha.py": "`up --hosts --ha --tls`: tests/ha's failover jobs run in CI",
    "tests/hosts/test_hosts_faults.py": "a host cut off mid-training: "
    "test_hosts_cluster.py's link down/up and tests/test_fault_tolerance.py run in CI",
}


def matches(nodeid: str, entry: str) -> bool:
    """Whether the test ``nodeid`` is the one ``entry`` names (the module's docstring)."""
    if entry.endswith("]") and "[!" in entry:
        test, kept = entry[:-1].split("[!", 1)
        return nodeid.startswith(test + "[") and nodeid != f"{test}[{kept}]"
    if "::*" in entry:
        path, suffix = entry.split("::*", 1)
        return nodeid.startswith(path + "::") and nodeid.endswith(suffix)
    return nodeid == entry or any(nodeid.startswith(entry + sep) for sep in ("::", "[", "/"))
