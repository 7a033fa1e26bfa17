"""Which tests run in the full tier only (``dev/test --full``, ``--area NAME``), not in CI's
landing run, and which cheaper test still covers each in CI. tests/conftest.py marks them
``full``; dev/suite.py deselects ``full`` in the fast and CI tiers.

An entry is a test file, ``file::test`` (every parametrization of it), ``file::test[id]`` (one),
``file::test[!id]`` (every parametrization but one) or ``file::*[id]`` (every test of the file
with that parametrization id).
"""

from __future__ import annotations

FULL_ONLY: dict[str, str] = {
    # --- moved to keep CI under 30 minutes as this wave's tests came in -------------------------
    "tests/test_data.py::test_a_task_without_pandas_reads_a_dataset_of_numbers": "a fresh "
    "interpreter importing TensorFlow with pandas hidden: the other tests/test_data.py readers "
    "of the same numbers (with pandas present) run in CI",
    "tests/frameworks/test_torch_data.py::test_a_ddp_job_trains_on_its_shards": "a DDP job on "
    "Parquet shards: the shard dataset's unit tests in that file and tests/launcher/"
    "test_warm_frameworks.py's DDP job over gloo run in CI",
    "tests/devcluster/test_devcluster_tls.py::test_a_certificate_made_for_other_names_is_made_"
    "again": "a second certificate set: the other tests of that file, and tests/ha's [tls] "
    "cluster making its own, run in CI",
    "tests/frameworks/test_pytorch.py::test_ddp_with_gloo_on_two_workers_trains_and_keeps_"
    "replicas_equal[local]": "DDP over gloo in fresh processes (105 s beside the rest): "
    "tests/launcher/test_warm_frameworks.py's pytorch case trains the same cell with the same "
    "checks (the loss falls, replicas equal, ranks) and test_stalled_jobs.py's [pytorch] and "
    "test_a_pytorch_session_keeps_its_process_group_across_cells run gloo in fresh processes, "
    "in CI",
    # --- the one-host devcluster (tests marked yarn) -------------------------------------------
    "tests/yarn/test_yarn_backend.py::test_the_submission_steps_called_one_by_one_run_the_job": (
        "backend.py's four steps called apart (a job of its own): every YARN job in CI runs "
        "them chained through backend.submit, and test_interrupt_while_waiting_for_the_am_kills_"
        "the_application undoes a launch"
    ),
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
    "tests/secure/test_secure_isolation.py::test_bob_cannot_take_the_stacks_of_alices_job": (
        "bob against alice's stacks on the Kerberized cluster (a job of its own): "
        "tests/am/test_routes_typed.py (the stacks route refuses a task's token and a wrong "
        "one) and test_bob_is_shut_out_of_alices_job (the AM's API without the job's token) "
        "run in CI"
    ),
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
    "tests/yarn/test_yarn_gpuless.py": "GPUs asked of a cluster without yarn.io/gpu (a second "
    "cluster, `up --no-gpus`): tests/launcher/test_rm_checks.py::test_gpus_on_a_cluster_without_"
    "yarn_io_gpu_are_refused_with_the_reason (the check over the RM's answers) and "
    "tests/devcluster/test_devcluster_gpus.py (the cluster's settings) run in CI, and "
    "tests/yarn/test_yarn_backend.py's GPU refusals on the plain cluster",
    "tests/test_origin.py::*[yarn]": "a YARN job's origin.json and its result collected by "
    "another kernel: the [local] cases and the browser's reconnect test (the same record and "
    "client code) run in CI; the YARN client's copy of the result is tests/yarn's",
    "tests/yarn/test_yarn_damaged_records.py": "the HDFS history fuzz (up to 300 s): "
    "tests/test_damaged_records.py's fuzz of the same readers runs in CI",
    "tests/yarn/test_yarn_fault_tolerance.py": "five kinds of fault on YARN: "
    "tests/test_fault_tolerance.py (local, kill -9) and tests/secure's worker "
    "fault on HDFS checkpoints run in CI",
    "tests/yarn/test_yarn_doctor.py::test_the_probe_runs_the_packed_venv_and_its_interpreter_"
    "as_a_job_would": "doctor's probe in a packed venv with its interpreter (two probes, 80 s): "
    "tests/launcher/test_doctor.py (the probe's command and localization, the base interpreter "
    "looked for and remembered), tests/launcher/test_shipchoice.py and test_cached_archives.py "
    "(--ship-python, the interpreter kept on this host) and the devcluster's plain probe run in CI",
    "tests/yarn/test_yarn_pack_env.py": "--pack-env on one host: the several-host job from the "
    "edge packs and ships the venv in CI",
    "tests/yarn/test_yarn_cache_replaced.py": "a task overwrites the cached --pack-env archive "
    "on HDFS (four jobs and a venv built): tests/launcher/test_cached_archives.py, the rule over "
    "a fake HDFS client, runs in CI",
    "tests/yarn/test_yarn_src_handover.py": "the notebook's directory handed to the warm AM "
    "(24 s): the warm AM's next job (test_yarn_warm.py) and the directory shipped on YARN "
    "(tests/yarn/test_yarn_examples.py) run in CI",
    "tests/test_src_dir.py::*[yarn]": "the notebook's directory on YARN (27 s): "
    "tests/yarn/test_yarn_examples.py's cell importing beside the notebook from the shipped "
    "archive runs in CI, and these tests on the local backend",
    "tests/frameworks/test_stalled_jobs.py::"
    "test_a_rank_that_sleeps_before_its_collective_is_named_with_every_ranks_stack[!pytorch]": (
        "a stalled TensorFlow MWMS and JAX job (20 s each): the [pytorch] case runs in CI, and "
        "the stall rule is framework-neutral (tests/am/test_stalls.py)"
    ),
    "tests/frameworks/test_stalled_jobs.py::"
    "test_a_stalled_job_is_killed_when_the_setting_says_kill": (
        "tony.stall.action=kill on real processes (12 s): tests/am/test_stalls.py's kill case "
        "and the [pytorch] stall in CI"
    ),
    "tests/frameworks/test_stalled_jobs.py::"
    "test_a_stalled_attempt_is_restarted_when_the_setting_says_restart": (
        "tony.stall.action=restart on real processes, two attempts (13 s): "
        "tests/am/test_stalls.py's restart case and the [pytorch] stall in CI"
    ),
    "tests/frameworks/test_stalled_jobs.py::"
    "test_on_yarn_each_containers_sidecar_dumps_its_task_for_the_stall": (
        "a stall on YARN: the [pytorch] stall on the local backend runs in CI (the sidecar and "
        "the AM are the same code in a container), and so does the stacks route on YARN's AM "
        "through tests/am/test_routes_typed.py's real AM"
    ),
    "tests/browser/test_stall_view.py": "a stalled three-rank PyTorch job in JupyterLab (a second "
    "JupyterLab and browser): in CI, tests/browser/test_lab.py runs the widget, the panel and the "
    "job page in Chromium; the [pytorch] stall above, the stacks route and the stall's detail "
    "(tests/server_ext/test_job_detail.py), the grouping (tests/test_stackgroups.py) and the "
    "widget's stall and sparklines (tests/widgets/test_view.py)",
    "tests/browser/test_reconnect.py::test_a_yarn_run_is_never_lost": "the page closed and "
    "opened again on a devcluster job (the yarn partition): test_runs_are_never_lost's local cases "
    "(the same cell view, job record and reconnect) and tests/yarn's logs and states of a YARN "
    "job run in CI",
    "tests/frameworks/test_pytorch.py::*[yarn]": "PyTorch in YARN containers (44 s): "
    "tests/frameworks/test_jax.py's [yarn] jobs (a framework's rendezvous from the containers' "
    "addresses) and test_pytorch.py's [local] session and the warm DDP job (tests/launcher/"
    "test_warm_frameworks.py) run in CI",
    "tests/test_mlflow.py::*[yarn]": "the MLflow run from YARN containers (17 s): the [local] "
    "run in CI; the tracking variables reach the containers as every forwarded variable does "
    "(tests/test_magics.py's [yarn] jobs)",
    "tests/test_session.py::test_state_is_kept_between_cells_and_training_goes_on[yarn]": "the "
    "[local] case and the session's other [yarn] tests (names and logs, interrupt) run in CI",
    "tests/test_magics.py::test_registration_timeout_ends_the_job[yarn]": "the AM's deadlines "
    "are one code on both backends: the [local] case runs in CI",
    "tests/test_magics.py::test_worker_waiting_after_chief_is_stopped[yarn]": "the [local] case "
    "runs in CI (the AM's rule is one code on both backends)",
    "tests/executor/test_tensorboard.py::test_tensorboard_ends_with_the_chief[yarn]": "the "
    "[local] case and TensorBoard on YARN through the tracking URL "
    "(tests/yarn/test_yarn_server_api.py) run in CI",
    "tests/yarn/test_yarn_history.py::test_tensorboard_of_a_finished_job_from_its_history": "a "
    "finished job's TensorBoard (tests/server_ext/test_finished_tensorboard.py) and the HDFS "
    "history read from another home (test_a_job_is_listed_opened_and_read_from_another_home) "
    "run in CI",
    "tests/secure/test_secure_jobs.py::test_pack_env_localizes_with_the_users_tokens": "an "
    "archive on HDFS localized with alice's tokens: every secure job in CI localizes its bundle "
    "so, and the several-host job from the edge ships a packed venv in CI",
    "tests/yarn/test_yarn_startup_guard.py": "cold and warm start-up against the distributed "
    "shell (three rounds of three jobs with TensorFlow, about 3 minutes): every YARN job in CI "
    "starts the same way, and tests/am/test_classarchive.py checks the AM's class archive",
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
    "tests/test_fault_tolerance.py::test_lost_worker_resumes_from_checkpoint[sigstop]": "the "
    "kill -9 case (resumed from its checkpoint, 10-15 s quicker) and tests/test_magics.py::"
    "test_hung_worker_is_caught_by_missed_heartbeats (a stopped worker found by its missed "
    "heartbeats) run in CI, and tests/secure's worker fault",
    "tests/test_training.py::test_parameter_server_strategy_trains_with_chief_workers_and_ps": (
        "PS training on YARN (tests/yarn/test_yarn_training.py) runs in CI"
    ),
    "tests/test_data_jobs.py::test_mwms_trains_from_a_dataframe_shard": "the shards' tests of "
    "test_data_jobs.py (disjoint, complete, typed) and MWMS training (test_training.py) run in "
    "CI",
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
    "tests/hosts/test_hosts_jobs.py::test_ps_shard_hdfs_data_session_warm_am_tensorboard_and_"
    "history_from_the_edge": "the same features on one host (tests/yarn/test_yarn_training.py's "
    "PS job, test_yarn_data.py's shards, tests/test_session.py [yarn], test_yarn_warm.py, "
    "test_yarn_server_api.py's TensorBoard, test_yarn_history.py) and the MWMS job from the edge "
    "run in CI",
    "tests/hosts/test_hosts_jobs.py::test_a_blocked_way_from_the_edge_to_the_nodes_is_named_not_"
    "waited_out": "the words for an AM this host cannot reach (tests/launcher/test_launch_outcome"
    ".py, test_am_unreachable.py) run in CI",
    "tests/hosts/test_hosts_jobs.py::test_a_venv_on_the_kernels_pyenv_python_trains_on_workers_"
    "that_have_none": "a second 2 GB TensorFlow venv to pack: the interpreter shipped on one "
    "host (tests/yarn/test_yarn_pack_env.py, tests/launcher/test_interpreter.py) and the MWMS "
    "job from the edge run in CI",
    "tests/hosts/test_hosts_jobs.py::test_a_users_package_installed_editable_imports_in_every_"
    "task": "a 470 MB venv to pack: the editable package in a one-host YARN task "
    "(tests/yarn/test_yarn_pack_env.py) and the discovery's unit tests run in CI",
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
