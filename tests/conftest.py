"""Fixtures shared across the suite (helpers/ holds what is not a fixture). The backend
contract: a test that uses ``backend`` runs once on each backend; tests under tests/yarn/ send
every job to the devcluster (tests/yarn/conftest.py)."""

import getpass
import importlib.util
import io
import os
import signal

import pytest
from helpers.jobs import private_home
from helpers.yarn import Cluster, jobs_to_yarn
from tiers import FULL_ONLY, matches

if importlib.util.find_spec("tony_jupyter_devcluster.testing"):
    pytest_plugins = ["tony_jupyter_devcluster.testing"]


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of tests/tiers.py's table are marked ``full``: the full tier only."""
    for item in items:
        if any(matches(item.nodeid, entry) for entry in FULL_ONLY):
            item.add_marker(pytest.mark.full)


@pytest.fixture
def tony_home(tmp_path, monkeypatch):
    """A private TONY_JUPYTER_HOME; after the test, asserts no AM or executor is left."""
    yield from private_home(tmp_path, monkeypatch)


@pytest.fixture(params=["local", pytest.param("yarn", marks=pytest.mark.yarn)])
def backend(request, tony_home, monkeypatch):
    """Where the test's jobs run: the local backend, or the devcluster (marked ``yarn``, so
    ``-m yarn`` and ``-m "not yarn"`` split the suite). A contract test asks for it with
    ``@pytest.mark.usefixtures("backend")``: then ``tony_home`` (and ``shell``) point at it."""
    if request.param == "yarn":
        yield from jobs_to_yarn(monkeypatch, request.getfixturevalue("yarn_cluster"))
    else:
        yield "local"


@pytest.fixture
def shell(tony_home, monkeypatch):
    """An IPython shell with the extension loaded (the same magics a notebook gets), in a
    directory of its own: a notebook's working directory is shipped with its cells."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    notebook = tony_home.parent / "notebook"
    notebook.mkdir(exist_ok=True)
    monkeypatch.chdir(notebook)
    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "tony_jupyter")
    yield ip


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
# The suite's many short local jobs run without a spare AM started as the extension loads and
# without spares that import the framework ahead (each a TensorFlow import's CPU, on CI's two
# cores): tests/launcher/test_warm_on_load.py and test_warm_frameworks.py turn them on.
os.environ.setdefault("TONY_JUPYTER_WARM_ON_LOAD", "0")
os.environ.setdefault("TONY_JUPYTER_WARM_IMPORT", "0")
# dev/test runs one pytest in the background (`&`), where bash starts it with SIGINT ignored and
# Python then keeps it ignored: the tests that press Ctrl-C need KeyboardInterrupt back.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _server_base_url_does_not_leak(monkeypatch):
    """The server extension writes the server's base_url into os.environ (kernels inherit it);
    an in-process server test must not hand its base_url to the tests after it."""
    monkeypatch.setenv("TONY_JUPYTER_BASE_URL", "/")


@pytest.fixture
def jp_server_config():
    """pytest_jupyter's in-process server, with the extension enabled."""
    return {"ServerApp": {"jpserver_extensions": {"tony_jupyter": True}}}


# --- the devcluster ------------------------------------------------------------------------------


@pytest.fixture(scope="session", name="yarn_cluster")
def yarn_cluster_fixture(request):
    """The session's devcluster (tony_jupyter_devcluster.testing), or a running one."""
    try:
        return request.getfixturevalue("devcluster")
    except pytest.FixtureLookupError:
        from tony_jupyter_devcluster import DevCluster

        dc = DevCluster()
        if not dc.is_running():
            pytest.skip("no devcluster: run `python -m tony_jupyter_devcluster up`")
        return dc


@pytest.fixture(name="cluster")
def cluster_fixture(yarn_cluster):
    return Cluster(yarn_cluster, getpass.getuser())


@pytest.fixture
def hdfs_dir(devcluster, monkeypatch):
    """Parquet files on the devcluster's HDFS: (client, hdfs:// url, path), removed after."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hdfs import InsecureClient

    monkeypatch.setenv("HADOOP_CONF_DIR", str(devcluster.conf_dir))
    monkeypatch.delenv("TONY_WEBHDFS_URL", raising=False)
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    client = InsecureClient(devcluster.webhdfs_url, user=user)
    base = f"/user/{user}/tony-data-test-{os.getpid()}"
    client.makedirs(base)
    for i in range(3):  # 3 files x 4 row groups of 25 rows: ids 0..299
        buf = io.BytesIO()
        pq.write_table(pa.table({"id": np.arange(i * 100, (i + 1) * 100)}), buf, row_group_size=25)
        client.write(f"{base}/part-{i}.parquet", data=buf.getvalue(), overwrite=True)
    client.write(f"{base}/_SUCCESS", data=b"", overwrite=True)
    yield client, f"{devcluster.fs_default_name.rstrip('/')}{base}", base
    client.delete(base, recursive=True)


@pytest.fixture
def out(tmp_path):
    """A directory for what each task reports (helpers.data.REPORT)."""
    d = tmp_path / "out"
    d.mkdir()
    return d
