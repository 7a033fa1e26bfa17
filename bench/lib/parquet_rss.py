"""``python bench/lib/parquet_rss.py MODE BATCH_SIZE FILE...``: the data part's memory side, in
a fresh process per measurement: stream FILEs through ``tony_jupyter.data.dataset`` (MODE
``dataset``) or load them with ``pq.read_table`` (MODE ``read_table``), RSS sampled every 10 ms;
prints one JSON line (baseline, peak, growth, RSS at each quarter of the run)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


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


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], sys.argv[3:], int(sys.argv[2]))))
