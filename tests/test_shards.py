"""--shard without processes: the split arithmetic, the checks made before submission, and the
Parquet round trip a task sees (tables.py keeps the type)."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tony_jupyter.core import shards, tables
from tony_jupyter.core.errors import BundleError, SpecError
from tony_jupyter.options import parse_job_args


def spec(line: str):
    return parse_job_args(line)[1]


@pytest.mark.parametrize("rows,parts", [(10, 3), (3, 3), (7, 1), (100_003, 4), (5, 5)])
def test_bounds_are_contiguous_complete_and_balanced(rows, parts):
    b = shards.bounds(rows, parts)
    assert b[0][0] == 0 and b[-1][1] == rows
    assert all(b[i][1] == b[i + 1][0] for i in range(parts - 1))
    sizes = [stop - start for start, stop in b]
    assert max(sizes) - min(sizes) <= 1


def test_row_groups_are_capped_and_even():
    assert shards.row_group_size(10, cap=4) == 4  # 3 groups: 4, 4, 2 -> ceil(10/3)
    assert shards.row_group_size(100, cap=1000) == 100
    assert shards.row_group_size(0) == 1


def test_readers_per_strategy():
    assert shards.readers(spec("--workers 3")) == ("worker:0", "worker:1", "worker:2")
    assert shards.readers(spec("--chief --workers 2")) == ("chief:0", "worker:0", "worker:1")
    assert shards.readers(spec("--workers 2 --ps 1 --evaluator")) == ("worker:0", "worker:1")
    # ParameterServerStrategy: workers only serve, the chief reads everything.
    assert shards.readers(spec("--chief --workers 2 --ps 1")) == ("chief:0",)


def test_names_comma_separated_or_repeated():
    args, _ = parse_job_args("--shard a,b --shard c --shard a")
    assert shards.parse_names(args.shard) == ("a", "b", "c")
    with pytest.raises(SpecError, match="'1x' is not a Python name"):
        shards.parse_names(["1x"])


@pytest.mark.parametrize(
    "value,message",
    [
        ({"a": [1, 2]}, "'v' is a builtins.dict, not a pandas DataFrame, pyarrow Table or NumPy"),
        (np.float64(3.0), "not a pandas DataFrame"),
        (np.array(5), "0-d array"),
        (np.ones(4, dtype=complex), "dtype complex128, which Arrow cannot store"),
        (pd.DataFrame({"m": [1, "a", 2.0]}), "column 'm' of 'v' (dtype object) cannot become"),
        (pd.DataFrame({"x": [1, 2]}), "2 rows for 3 reading tasks"),
    ],
)
def test_bad_shard_values(value, message):
    with pytest.raises(BundleError) as e:
        shards.plan(["v"], {"v": value}, spec("--workers 3"))
    assert message in str(e.value) and "nothing was submitted" in str(e.value)


def test_undefined_shard_name():
    with pytest.raises(BundleError, match="--shard 'nope': not defined in the notebook"):
        shards.plan(["nope"], {}, spec("--workers 2"))


def frames():
    n = 1001
    df = pd.DataFrame(
        {"id": np.arange(n), "x": np.linspace(0, 1, n), "s": [f"r{i}" for i in range(n)]}
    )
    df["c"] = pd.Categorical(np.where(df.id % 2, "odd", "even"))
    return {
        "df": df,
        "tbl": pa.table({"id": np.arange(n)}),
        "arr": np.arange(n * 6, dtype="float32").reshape(n, 2, 3),
        "vec": np.arange(n),
    }


@pytest.mark.parametrize("line", ["--workers 4", "--chief --workers 2", "--workers 1"])
def test_written_parts_bind_disjoint_complete_and_keep_the_type(tmp_path, line, monkeypatch):
    monkeypatch.setattr(shards, "ROW_GROUP_ROWS", 100)
    ns = frames()
    s = spec(line)
    plan = shards.plan(list(ns), ns, s)
    manifest = shards.write(plan, tmp_path)
    json.dumps(manifest)  # goes into bundle.json
    assert manifest["readers"] == list(shards.readers(s))
    assert sorted(shards.files(manifest)) == sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet")
    )
    got = [shards.bind(tmp_path, manifest, t) for t in manifest["readers"]]
    for name, original in ns.items():
        parts = [g[name] for g in got]
        assert all(type(p) is type(original) for p in parts)
        sizes = [
            tables.kind(p) and (p.num_rows if isinstance(p, pa.Table) else len(p)) for p in parts
        ]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(ns["vec"])
    ids = [list(g["df"]["id"]) for g in got]
    assert sorted(i for part in ids for i in part) == list(range(1001))
    assert [list(g["df"].index) for g in got] == ids  # rows keep their labels
    pd.testing.assert_frame_equal(pd.concat([g["df"] for g in got]), ns["df"])
    np.testing.assert_array_equal(np.concatenate([g["arr"] for g in got]), ns["arr"])
    assert pa.concat_tables([g["tbl"] for g in got]).equals(ns["tbl"])
    # Row groups stay under the cap, so a part streams.
    import pyarrow.parquet as pq

    md = pq.ParquetFile(tmp_path / manifest["names"]["df"]["parts"][0]).metadata
    assert max(md.row_group(i).num_rows for i in range(md.num_row_groups)) <= 100


def test_evaluator_gets_everything_and_ps_gets_none(tmp_path):
    ns = {"df": frames()["df"]}
    s = spec("--workers 2 --ps 1 --evaluator")
    manifest = shards.write(shards.plan(["df"], ns, s), tmp_path)
    assert len(shards.bind(tmp_path, manifest, "evaluator:0")["df"]) == 1001
    assert shards.bind(tmp_path, manifest, "ps:0") == {"df": None}
    assert shards.bind(tmp_path, None, "worker:0") == {}


def test_pull_round_trip_is_arrow_and_keeps_types():
    ns = frames()
    arrow, rest = tables.split_tabular({**ns, "n": 3, "mixed": pd.DataFrame({"m": [1, "a"]})})
    assert sorted(arrow) == sorted(ns) and sorted(rest) == ["mixed", "n"]  # mixed: pickle
    back = {k: tables.from_ipc(v) for k, v in arrow.items()}
    pd.testing.assert_frame_equal(back["df"], ns["df"])
    assert back["tbl"].equals(ns["tbl"])
    assert back["arr"].dtype == np.float32 and (back["arr"] == ns["arr"]).all()


def test_staged_bytes_match_the_written_files(tmp_path):
    ns = {"df": frames()["df"]}
    plan = shards.plan(["df"], ns, spec("--workers 3"))
    manifest, files = shards.staged(plan)
    assert manifest == shards.write(plan, tmp_path)
    assert sorted(files) == shards.files(manifest)
    other = tmp_path / "uploaded"
    for rel, data in files.items():
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_bytes(data)
    got = [shards.bind(other, manifest, f"worker:{i}")["df"] for i in range(3)]
    pd.testing.assert_frame_equal(pd.concat(got), ns["df"])
