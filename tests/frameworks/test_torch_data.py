"""--shard and tony_jupyter.data for PyTorch: a DDP job on two workers trains from
``torch_rows(df)`` (its own shard as a torch.utils.data.Dataset) and reads Parquet files as NumPy
batches (``batches``) and tensors (``torch_dataset``), each worker its own rows."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.jobs import wait_no_processes
from sklearn.datasets import load_digits

from tony_jupyter import data

torch = pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[test]'")


@pytest.fixture
def digits_df():
    X, y = load_digits(return_X_y=True)
    df = pd.DataFrame((X / 16.0).astype("float32"), columns=[f"p{i}" for i in range(64)])
    df["target"] = y
    return df


@pytest.fixture
def parquet_dir(tmp_path, digits_df):
    out = tmp_path / "digits"
    out.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(digits_df)), 4)):
        pq.write_table(
            pa.Table.from_pandas(digits_df.iloc[part], preserve_index=False),
            out / f"part-{i}.parquet",
            row_group_size=200,
        )
    return out


def test_torch_rows_is_a_dataset_of_the_shard(digits_df):
    ds = data.torch_rows(digits_df, label="target")
    x, y = ds[3]
    assert len(ds) == len(digits_df) and x.dtype == torch.float32 and x.shape == (64,)
    assert y.item() == digits_df["target"].iloc[3]
    (row,) = data.torch_rows(np.arange(12).reshape(4, 3))[1]
    assert row.tolist() == [3, 4, 5]
    with pytest.raises(data.DataError, match="no column 'label'; the columns are p0, p1"):
        data.torch_rows(digits_df, label="label")
    with pytest.raises(data.DataError, match="an array has no columns"):
        data.torch_rows(np.zeros((2, 2)), label="y")


def test_batches_are_numpy_and_the_shards_cover_every_row(parquet_dir):
    seen = []
    for i in range(2):
        b = data.batches(parquet_dir, label="target", stack=True, batch_size=100, shard=(i, 2))
        parts = list(b)
        assert len(parts) == len(b)
        x, y = parts[0]
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == (100, 64)
        seen.append(sum(len(y) for _, y in parts))
    assert seen == [899, 898]  # files 0 and 2 (450 + 449 rows), files 1 and 3 (449 + 449)
    shuffled = data.batches(parquet_dir, columns=["p5"], batch_size=64, shuffle=True, seed=1)
    first, second = next(iter(shuffled)), next(iter(shuffled))
    assert set(first) == {"p5"} and not np.array_equal(first["p5"], second["p5"])  # new pass


# Each worker trains on its own shard of the digits (--shard df) through a DataLoader; DDP
# keeps the replicas equal. It also reads the same rows from Parquet as NumPy batches and as
# tensors, sharded between the two workers by tony_jupyter.data.
DDP_SHARD = """
import torch, torch.distributed as dist, tony_jupyter
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from tony_jupyter import data

dist.init_process_group("gloo")
torch.manual_seed(0)
rows = data.torch_rows(df, label="target")
loader = DataLoader(rows, batch_size=32, shuffle=True, drop_last=True)
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
losses = []
for epoch in range(3):
    for step, (x, y) in enumerate(loader):
        if step == 25:  # the same number of steps on both workers (shards may differ by a row)
            break
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        losses.append(loss.item())
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
every = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
dist.all_gather(every, flat)
equal = all(torch.equal(every[0], other) for other in every[1:])
numpy_rows = sum(len(y) for _, y in data.batches(PARQUET, label="target", stack=True))
tensor_rows = sum(len(y) for _, y in DataLoader(
    data.torch_dataset(PARQUET, label="target", stack=True, batch_size=128), batch_size=None))
counts = torch.tensor([len(rows), numpy_rows, tensor_rows])
dist.all_reduce(counts)
dist.destroy_process_group()
(len(rows), counts.tolist())
"""


@pytest.mark.slow
def test_a_ddp_job_trains_on_its_shards(shell, tony_home, digits_df, parquet_dir):
    shell.user_ns["df"], shell.user_ns["PARQUET"] = digits_df, str(parquet_dir)
    mine, counts = shell.run_cell_magic(
        "tony",
        "--framework pytorch --workers 2 --shard df --no-tensorboard --pull losses,equal",
        DDP_SHARD,
    )
    assert mine == 899  # worker:0's shard: 1797 rows in two, the first one row longer
    assert counts == [1797, 1797, 1797]  # every row read once, by one worker, each way
    losses = shell.user_ns["losses"]
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 * 0.6  # the loss falls
    assert shell.user_ns["equal"] is True
    assert wait_no_processes(tony_home) == []
