"""What only the YARN backend does: checks against the cluster before submitting, cleanup after
a failed or interrupted submission, kill through YARN, placement by queue, label and GPUs."""

import shutil
import time
import uuid

import pytest
from helpers.leftovers import live_apps, staged, wait_nothing_left
from IPython.core.error import UsageError

from tony_jupyter.core.bundle import make_bundle
from tony_jupyter.core.errors import BackendError
from tony_jupyter.job import TonyJob
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client
from tony_jupyter.launcher.yarn import backend
from tony_jupyter.options import parse_job_args
from tony_jupyter_devcluster.config import NM2_GPUS, NM_VCORES

pytestmark = pytest.mark.yarn
RUN = uuid.uuid4().hex[:6]  # app names unique to this run: the cluster keeps old apps


def assert_nothing_left(cluster, name):
    ids = {a["id"] for a in cluster.apps(name)}
    wait_nothing_left(
        0,  # at once: a refused submission leaves nothing to clean up later
        jobs=list_jobs,
        apps=lambda: live_apps(cluster.apps(name)),
        staging=lambda: staged(cluster.staging(), ids),
    )


@pytest.mark.parametrize(
    "flags,message",
    [
        ("--memory 100g", "ask for 102400 MB memory, above the most a container can have"),
        ("--vcores 64", "ask for 64 vcores, above the most"),
        (f"--gpus {NM2_GPUS + 1}", f"ask for {NM2_GPUS + 1} GPUs, above the most"),
        # GPUs only a labelled partition has: the message says where they are.
        ("--gpus 1", f"partition 'gpu' has {NM2_GPUS} GPUs: add --node-label gpu --queue gpu"),
        ("--conf tony.am.memory=64g", "the AM (tony.am.memory/vcores) ask for 65536 MB"),
        ("--queue nope", "YARN queue 'nope' does not exist; this cluster's queues: default, gpu"),
        ("--node-label nolabel", "node label 'nolabel' does not exist on this cluster"),
        ("--node-label gpu", "queue 'default' cannot use node label 'gpu'"),
        # Each container fits a node, all of them (and the AM) never fit the partition.
        (
            f"--workers {NM_VCORES}",
            f"the job asks for {NM_VCORES + 1} vcores in all in the default partition",
        ),
    ],
)
def test_request_yarn_cannot_satisfy_is_refused_before_submitting(
    shell,
    tony_home,
    cluster,
    flags,
    message,
):
    before = len(cluster.apps())
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", f"{flags} --name badinput-{RUN}", "1")
    assert message in str(e.value)
    assert len(cluster.apps()) == before  # not even an application id was used for an app
    assert_nothing_left(cluster, f"badinput-{RUN}")


def test_a_label_the_cluster_has_but_no_node_carries_is_refused_before_submitting(
    shell, tony_home, cluster
):
    label = f"spare{RUN}"
    user = {"user.name": cluster.user}
    added = cluster.http.post(
        f"{cluster.rm}/ws/v1/cluster/add-node-labels",
        params=user,
        json={"nodeLabelInfo": [{"name": label, "exclusivity": True}]},
        timeout=10,
    )
    assert added.status_code == 200, added.text
    try:
        before = len(cluster.apps())
        with pytest.raises(UsageError) as e:
            shell.run_cell_magic("tony", f"--node-label {label} --name nolabel-{RUN}", "1")
        assert f"no node carries node label {label!r}" in str(e.value)
        assert "(labels nodes carry: gpu)" in str(e.value)
        assert len(cluster.apps()) == before
        assert_nothing_left(cluster, f"nolabel-{RUN}")
    finally:
        cluster.http.post(
            f"{cluster.rm}/ws/v1/cluster/remove-node-labels",
            params={**user, "labels": label},
            timeout=10,
        )


def test_unreachable_resourcemanager_names_the_address_and_its_source(
    shell, tony_home, tmp_path, monkeypatch
):
    import os

    conf = tmp_path / "conf"
    shutil.copytree(os.environ["HADOOP_CONF_DIR"], conf)
    site = conf / "yarn-site.xml"
    text = site.read_text()
    start = text.index("<name>yarn.resourcemanager.webapp.address</name><value>")
    end = text.index("</value>", start)
    prefix = "<name>yarn.resourcemanager.webapp.address</name><value>"
    site.write_text(text[:start] + prefix + "127.0.0.1:9" + text[end:])
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    with pytest.raises(BackendError) as e:
        shell.run_cell_magic("tony", f"--name norm-{RUN}", "1")
    msg = str(e.value)
    assert "cannot reach the YARN ResourceManager at http://127.0.0.1:9" in msg
    assert f"yarn.resourcemanager.webapp.address in {site}" in msg
    assert list_jobs() == []


def test_hdfs_permission_denied_leaves_nothing(shell, tony_home, cluster, monkeypatch):
    import os

    from tony_jupyter.core.hadoopconf import read_site

    hdfs = read_site(__import__("pathlib").Path(os.environ["HADOOP_CONF_DIR"]) / "hdfs-site.xml")
    if hdfs.get("dfs.permissions.enabled", "true") == "false":
        pytest.skip("the devcluster runs HDFS with dfs.permissions.enabled=false")
    monkeypatch.setenv("HADOOP_USER_NAME", "tony-intruder")
    with pytest.raises(BackendError, match="HDFS permission denied .* as user 'tony-intruder'"):
        shell.run_cell_magic("tony", f"--name perm-{RUN}", "1")
    assert_nothing_left(cluster, f"perm-{RUN}")


def test_am_that_cannot_start_shows_its_log_and_leaves_nothing(shell, tony_home, cluster):
    with pytest.raises(BackendError) as e:
        shell.run_cell_magic("tony", f"--python /nonexistent/python3 --name noam-{RUN}", "1")
    msg = str(e.value)
    assert "the job's AM ended before it started serving" in msg
    # The AM container's own stderr, from the NM: its check of the job's Python, worded.
    assert "the job's Python /nonexistent/python3 cannot run: no such file" in msg
    assert "name a Python the nodes have (--python PATH)" in msg
    (app,) = cluster.apps(f"noam-{RUN}")
    assert app["state"] in ("FAILED", "FINISHED") and app["finalStatus"] == "FAILED"
    assert_nothing_left(cluster, f"noam-{RUN}")


def test_interrupt_while_waiting_for_the_am_kills_the_application(
    shell,
    tony_home,
    cluster,
    monkeypatch,
):
    def interrupted(rm, app_id, token, localization_timeout_s, accepted=None):
        while (rm.app(app_id) or {}).get("state") not in ("ACCEPTED", "RUNNING"):
            time.sleep(0.05)
        raise KeyboardInterrupt  # what Ctrl-C raises in the kernel at this moment

    monkeypatch.setattr(backend, "wait_for_am", interrupted)
    with pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic("tony", f"--name interrupted-{RUN}", "1")
    (app,) = cluster.apps(f"interrupted-{RUN}")
    assert app["state"] == "KILLED"
    assert_nothing_left(cluster, f"interrupted-{RUN}")


def test_the_submission_steps_called_one_by_one_run_the_job(tony_home, cluster):
    """backend.submit's pipeline, step by step: nothing on the cluster until launch; the
    application is RUNNING after wait, its record the one launch wrote; and an Undo after
    launch leaves nothing (as a failed wait would)."""
    _, spec = parse_job_args(f"--workers 1 --backend yarn --no-tensorboard --name steps-{RUN}")
    bundle = make_bundle("6 * 7", {})
    connected = backend.connect(spec)
    assert isinstance(connected, backend.Connected) and connected.tokens is None
    archives = backend.stage_src(connected, backend.stage(connected), bundle)
    assert archives == backend.Staged() and not archives.ships_python  # no venv, no directory
    assert cluster.apps(f"steps-{RUN}") == []  # nothing exists before launch
    undo = backend.Undo(connected.cluster)
    launched = backend.launch(connected, archives, bundle, None, undo)
    assert (undo.app_id, undo.submitted, undo.record) == (launched.app_id, True, launched.record)
    assert [a["id"] for a in cluster.apps(f"steps-{RUN}")] == [launched.app_id]
    record = backend.wait(connected, launched)
    assert record is launched.record
    job = TonyJob(record)
    try:
        assert job.wait(120).state == "SUCCEEDED"
        assert job.result() == 42
    finally:
        job.client.release()
        job.client.wait_am_exit(60)
    # A second launch, undone at once: the application killed, its staging and record gone.
    undo = backend.Undo(connected.cluster)
    backend.launch(connected, archives, bundle, None, undo)
    assert undo.record is not None and undo.record.dir.exists()
    undo()
    ids = {undo.app_id}
    wait_nothing_left(
        0,
        apps=lambda: live_apps(cluster.apps(f"steps-{RUN}"), ids),
        staging=lambda: staged(cluster.staging(), ids),
        record=lambda: [d for d in [undo.record.dir] if d.exists()],
    )


def test_kill_ends_the_application_killed_with_no_container_left(
    shell,
    tony_home,
    cluster,
    capsys,
):
    job = shell.run_cell_magic(
        "tony", f"--workers 2 --async --name killme-{RUN}", "import time\ntime.sleep(600)"
    )
    deadline = time.monotonic() + 60
    while job.client.snapshot().state != "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    shell.run_line_magic("tony", f"kill {job.job_id}")
    assert "KILLED" in capsys.readouterr().out
    app = cluster.wait_app_end(job.job_id)
    assert app["finalStatus"] == "KILLED"
    deadline = time.monotonic() + 15  # the RM hears of the AM container's end on a heartbeat
    while live := [c for c in cluster.containers(job.job_id) if c["containerState"] != "COMPLETE"]:
        assert time.monotonic() < deadline, live
        time.sleep(0.2)
    # After the AM is gone the record still answers, from what the client kept.
    snap = open_client(list_jobs()[0]).snapshot()
    assert snap.state == "KILLED" and {t.state for t in snap.tasks} == {"STOPPED"}


def test_gpu_worker_lands_on_the_gpu_node_and_ps_on_the_plain_one(shell, tony_home, cluster):
    import requests

    nodes = requests.get(f"{cluster.rm}/ws/v1/cluster/nodes", timeout=10).json()["nodes"]["node"]
    gpu_node = next(n["id"] for n in nodes if "gpu" in (n.get("nodeLabels") or []))
    plain_node = next(n["id"] for n in nodes if not n.get("nodeLabels"))
    job = shell.run_cell_magic(
        "tony",
        f"--queue gpu --workers 1 --gpus 1 --ps 1 --async --pull cuda --name gpujob-{RUN} "
        "--conf tony.worker.node-label=gpu --conf tony.ps.node-label= "
        "--conf tony.worker.memory=768m --conf tony.ps.memory=640m --conf tony.ps.vcores=2",
        """
import os, time
cuda = os.environ.get("CUDA_VISIBLE_DEVICES")
time.sleep(600 if os.environ["JOB_NAME"] == "ps" else 4)
""",
    )
    deadline = time.monotonic() + 60
    while len(containers := cluster.containers(job.job_id)) < 3:
        assert time.monotonic() < deadline, containers
        time.sleep(0.2)
    by_mb = {c["allocatedMB"]: c for c in containers}
    worker, ps = by_mb[768], by_mb[640]
    res = {e["key"]: e["value"] for e in worker["allocatedResources"]["entry"]}
    assert worker["nodeId"] == gpu_node and res["yarn.io/gpu"] == 1
    assert ps["nodeId"] == plain_node and ps["allocatedVCores"] == 2
    assert job.result(timeout=120) is None and shell.user_ns["cuda"] == "0"
    assert cluster.wait_app_end(job.job_id)["finalStatus"] == "SUCCEEDED"
