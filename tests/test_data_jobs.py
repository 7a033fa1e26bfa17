"""--shard, dataset()'s sharding and Arrow --pull through %%tony on the real local backend.
The cells are plain Python (pyarrow, no TensorFlow) except the one `slow` training test."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cells import MWMS_MODEL
from helpers.data import REPORT, assert_partition, reports
from helpers.jobs import FAST, processes_under, wait_no_processes
from IPython.core.error import UsageError

from tony_jupyter.core.errors import JobFailedError
from tony_jupyter.launcher.client import list_jobs
from tony_jupyter.launcher.pickclient import open_client


def test_shards_are_disjoint_complete_and_typed_on_four_workers(shell, tony_home, out):
    n = 10_007
    shell.user_ns.update(
        out=str(out),
        df=pd.DataFrame({"id": np.arange(n), "x": np.random.default_rng(0).random(n)}),
        tbl=pa.table({"id": np.arange(n)}),
        arr=np.arange(n * 2).reshape(n, 2),
    )
    cell = (
        "seen = {'df': df['id'].tolist(), 'tbl': tbl['id'].to_pylist(), 'arr': "
        "(arr[:, 0] // 2).tolist(), 'types': [type(v).__name__ for v in (df, tbl, arr)], "
        "'index': df.index.tolist()}" + REPORT
    )
    shell.run_cell_magic("tony", f"--workers 4 --shard df,tbl --shard arr {FAST}", cell)
    got = reports(out)
    assert sorted(got) == [f"worker:{i}" for i in range(4)]
    for name in ("df", "tbl", "arr"):
        assert_partition([got[f"worker:{i}"][name] for i in range(4)], n)
    assert {tuple(r["types"]) for r in got.values()} == {("DataFrame", "Table", "ndarray")}
    assert all(r["index"] == r["df"] for r in got.values())  # rows keep their labels
    (rec,) = list_jobs()
    meta = json.loads((rec.dir / "bundle.json").read_text())
    assert sorted(meta["shards"]["names"]) == ["arr", "df", "tbl"]
    assert not {"df", "tbl", "arr"} & set(meta["pushed"])  # not pickled
    assert len(list((rec.dir / "shards" / "df").glob("part-*.parquet"))) == 4
    assert wait_no_processes(tony_home) == []


def test_chief_and_workers_share_evaluator_sees_all(shell, tony_home, out):
    shell.user_ns.update(out=str(out), df=pd.DataFrame({"id": np.arange(100)}))
    cell = "seen = {'ids': df['id'].tolist()}" + REPORT
    shell.run_cell_magic("tony", f"--chief --workers 2 --evaluator --shard df {FAST}", cell)
    got = reports(out)
    assert_partition([got[t]["ids"] for t in ("chief:0", "worker:0", "worker:1")], 100)
    assert got["evaluator:0"]["ids"] == list(range(100))
    assert wait_no_processes(tony_home) == []


@pytest.fixture
def parquet_files(tmp_path):
    d = tmp_path / "parquet"
    d.mkdir()
    for i in range(3):  # 3 files x 5 row groups of 200 rows
        ids = np.arange(i * 1000, (i + 1) * 1000)
        pq.write_table(
            pa.table({"id": ids, "x": ids * 0.5}), d / f"part-{i}.parquet", row_group_size=200
        )
    return d


@pytest.mark.parametrize("workers,mode", [(2, "file"), (3, "file"), (4, "row_group")])
def test_dataset_shards_across_workers(shell, tony_home, out, parquet_files, workers, mode):
    shell.user_ns.update(out=str(out), path=str(parquet_files / "*.parquet"))
    cell = (
        "from tony_jupyter import data\n"
        "ids = [i for b in data.record_batches(path, columns=['id'], batch_size=64) "
        "for i in b.column('id').to_pylist()]\n"
        "seen = {'ids': ids, 'mode': data.shard_plan(path).mode}" + REPORT
    )
    shell.run_cell_magic("tony", f"--workers {workers} {FAST}", cell)
    got = reports(out)
    assert {r["mode"] for r in got.values()} == {mode}
    parts = [got[f"worker:{i}"]["ids"] for i in range(workers)]
    assert_partition(parts, 3000, slack=1000 if mode == "file" else 200)
    assert wait_no_processes(tony_home) == []


@pytest.mark.parametrize(
    "line,message",
    [
        ("--workers 2 --shard cfg", "--shard 'cfg': 'cfg' is a builtins.dict, not a pandas"),
        ("--workers 2 --shard mixed", "column 'm' of 'mixed' (dtype object) cannot become"),
        ("--workers 4 --shard small", "--shard 'small': 3 rows for 4 reading tasks"),
        ("--workers 2 --shard nope", "--shard 'nope': not defined in the notebook"),
        ("--workers 2 --shard 2df", "--shard: '2df' is not a Python name"),
        ("--workers 2 --shard scalar", "'scalar' is a 0-d array"),
    ],
)
def test_bad_shard_is_a_usage_error_and_stages_nothing(shell, tony_home, line, message):
    shell.user_ns.update(
        cfg={"a": 1},
        mixed=pd.DataFrame({"m": [1, "two", 3.0]}),
        small=pd.DataFrame({"a": [1, 2, 3]}),
        scalar=np.array(1.5),
    )
    with pytest.raises(UsageError) as e:
        shell.run_cell_magic("tony", line, "1")
    assert message in str(e.value)
    assert list_jobs() == [] and processes_under(tony_home) == []
    assert not any((tony_home / "jobs").iterdir())  # not even a half-written job dir


def test_dataset_bad_path_fails_the_job_with_the_fix(shell, tony_home, tmp_path):
    shell.user_ns["path"] = str(tmp_path / "nothing-here" / "*.parquet")
    cell = "from tony_jupyter import data\nlist(data.record_batches(path))"
    with pytest.raises(JobFailedError) as e:
        shell.run_cell_magic("tony", f"--workers 2 {FAST}", cell)
    assert "matches no file; check the path" in (e.value.remote_traceback or "")
    assert wait_no_processes(tony_home) == []


def test_pull_of_tables_comes_back_as_arrow(shell, tony_home):
    cell = """
import numpy as np, pandas as pd, pyarrow as pa
frame = pd.DataFrame({"a": np.arange(5), "s": list("abcde")}, index=list("vwxyz"))
table = pa.table({"a": [1, 2, 3]})
array = np.arange(12, dtype="float32").reshape(3, 4)
other = {"k": 1}
"""
    shell.run_cell_magic("tony", "--workers 1 --pull frame,table,array,other", cell)
    ns = shell.user_ns
    assert list(ns["frame"].index) == list("vwxyz") and ns["frame"]["s"].tolist() == list("abcde")
    assert isinstance(ns["table"], pa.Table) and ns["table"]["a"].to_pylist() == [1, 2, 3]
    assert ns["array"].dtype == np.float32 and ns["array"].shape == (3, 4)
    assert ns["other"] == {"k": 1}
    (rec,) = list_jobs()
    result = json.loads((rec.dir / "result.json").read_text())
    assert sorted(result["arrow"]) == ["array", "frame", "table"]
    import base64

    import cloudpickle

    assert list(cloudpickle.loads(base64.b64decode(result["value"]))["pulled"]) == ["other"]
    assert open_client(rec).result()["pulled"]["array"].shape == (3, 4)
    assert wait_no_processes(tony_home) == []


# The digits model, trained from the DataFrame's shard (its label column is y).
TRAIN = (
    """
import tensorflow as tf
import tony_jupyter

X = df[[c for c in df.columns if c.startswith("p")]].to_numpy("float32")
y = df["label"].to_numpy()
"""
    + MWMS_MODEL
    + """history = model.fit(dataset, epochs=3, steps_per_epoch=25, verbose=2).history
rows = len(df)
history["loss"][-1]
"""
)


@pytest.mark.slow
def test_mwms_trains_from_a_dataframe_shard(shell, tony_home):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    df = pd.DataFrame((X / 16.0).astype("float32"), columns=[f"p{i}" for i in range(64)])
    df["label"] = y
    shell.user_ns["df"] = df
    last = shell.run_cell_magic("tony", "--workers 2 --shard df --pull history,rows", TRAIN)
    history = shell.user_ns["history"]
    assert last == history["loss"][-1] < history["loss"][0]
    assert shell.user_ns["rows"] in (len(df) // 2, len(df) // 2 + 1)  # the chief's shard
    assert wait_no_processes(tony_home) == []
