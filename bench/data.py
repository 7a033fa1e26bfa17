"""Reading Parquet through ``tony_jupyter.data.dataset`` vs plain pyarrow, in the same run
(A B A B ..., medians): rows/s and their ratio (goal >= 0.9). Then the peak resident memory
while streaming a data set 1x and 4x the size (each in a fresh process, RSS sampled every
10 ms): flat, not growing with the data set; ``pq.read_table`` of the same files for contrast.
Prints JSON; writes bench/results/data.json.

    .venv/bin/python bench/data.py [--rows 2000000] [--runs 5] [--batch-size 8192]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

COLUMNS = 16
ROW_GROUP = 65536


def write_files(d: Path, rows: int, files: int = 4) -> list[str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    out, per = [], rows // files
    for i in range(files):
        cols = {f"f{j}": rng.random(per, dtype="float32") for j in range(COLUMNS)}
        cols["label"] = rng.integers(0, 10, per)
        path = d / f"part-{i}.parquet"
        pq.write_table(pa.table(cols), path, row_group_size=ROW_GROUP)
        out.append(str(path))
    return out


def run_dataset(files: list[str], batch_size: int, stack: bool = False) -> tuple[int, float]:
    from tony_jupyter.data import dataset

    t0 = time.perf_counter()
    ds = dataset(files, label="label", batch_size=batch_size, shard=False, stack=stack)
    rows = 0
    for _, y in ds:
        rows += int(y.shape[0])
    return rows, time.perf_counter() - t0


def run_pyarrow(files: list[str], batch_size: int) -> tuple[int, float]:
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    rows = 0
    for f in files:
        for b in pq.ParquetFile(f).iter_batches(batch_size=batch_size):
            arrays = [c.to_numpy(zero_copy_only=False) for c in b.columns]  # what a consumer needs
            rows += len(arrays[-1])
    return rows, time.perf_counter() - t0


def throughput(files: list[str], runs: int, batch_size: int) -> dict:
    run_dataset(files, batch_size)  # warm: TensorFlow's first graph, the page cache
    run_pyarrow(files, batch_size)
    a, s, b = [], [], []
    for _ in range(runs):  # A B C A B C ...: the same machine load for all three
        rows, t = run_dataset(files, batch_size)
        a.append(rows / t)
        rows_s, t = run_dataset(files, batch_size, stack=True)
        s.append(rows_s / t)
        rows_b, t = run_pyarrow(files, batch_size)
        b.append(rows_b / t)
        assert rows == rows_b == rows_s, (rows, rows_b, rows_s)
    ma, ms, mb = statistics.median(a), statistics.median(s), statistics.median(b)
    return {
        "rows": rows,
        "batch_size": batch_size,
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "pyarrow_iter_batches_rows_per_s_median": round(mb),
        "tony_dataset_dict_rows_per_s_median": round(ma),
        "tony_dataset_stacked_rows_per_s_median": round(ms),
        "ratio_dict": round(ma / mb, 3),
        "ratio_stacked": round(ms / mb, 3),
        "goal": ">= 0.9",
        "pyarrow_all": [round(x) for x in b],
        "tony_dataset_dict_all": [round(x) for x in a],
        "tony_dataset_stacked_all": [round(x) for x in s],
    }


# --- memory: one fresh process per measurement ----------------------------------------------------


def child(mode: str, files: list[str], batch_size: int) -> dict:
    import psutil

    proc = psutil.Process()
    if mode == "dataset":
        import tensorflow as tf  # noqa: F401 - imported before the baseline is taken

        from tony_jupyter.data import dataset

        ds = dataset(files, label="label", batch_size=batch_size, shard=False)
    base = proc.memory_info().rss
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def sample():
        while not stop.wait(0.01):
            samples.append((time.perf_counter(), proc.memory_info().rss))

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    rows = 0
    if mode == "dataset":
        for _, y in ds:
            rows += int(y.shape[0])
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(files).num_rows
    end = time.perf_counter()
    stop.set()
    t.join()
    rss = [r for _, r in samples] or [proc.memory_info().rss]
    # RSS at each quarter of the run: flat when streaming, a staircase when loading.
    quarters = []
    for q in (0.25, 0.5, 0.75, 1.0):
        upto = [r for ts, r in samples if ts - t0 <= q * (end - t0)] or rss[:1]
        quarters.append(round(upto[-1] / 2**20, 1))
    mib = 2**20
    return {
        "rows": rows,
        "baseline_rss_mib": round(base / mib, 1),
        "peak_rss_mib": round(max(rss) / mib, 1),
        "growth_mib": round((max(rss) - base) / mib, 1),
        "rss_at_quarters_mib": quarters,
        "samples": len(samples),
    }


def memory(d: Path, rows: int, batch_size: int) -> dict:
    out = {}
    data_mib = {}
    for scale in (1, 4):
        files = write_files(d / f"x{scale}", rows * scale)
        data_mib[f"{scale}x"] = round(rows * scale * (COLUMNS * 4 + 8) / 2**20, 1)
        for mode in ("dataset", "read_table"):
            cmd = [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--batch-size",
                str(batch_size),
                *files,
            ]
            r = subprocess.run(cmd, capture_output=True, text=True, check=True)
            out[f"{mode}_{scale}x"] = json.loads(r.stdout.strip().splitlines()[-1])
    g1, g4 = out["dataset_1x"]["growth_mib"], out["dataset_4x"]["growth_mib"]
    return {
        "data_in_memory_mib": data_mib,
        "batch_buffer_mib": round(batch_size * (COLUMNS * 4 + 8) / 2**20, 2),
        "row_group_rows": ROW_GROUP,
        "dataset_growth_4x_over_1x": round(g4 / g1, 2) if g1 > 0 else None,
        **out,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--mem-rows", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=8192)
    p.add_argument("--child", default=None)
    p.add_argument("files", nargs="*")
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.files, args.batch_size)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp) / "throughput", args.rows)
        result = {
            "bench": "data",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "columns": f"{COLUMNS} float32 + int64 label",
            "throughput": throughput(files, args.runs, args.batch_size),
            "memory": memory(Path(tmp) / "memory", args.mem_rows, args.batch_size),
        }
    text = json.dumps(result, indent=1)
    print(text)
    out = Path(__file__).parent / "results" / "data.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
