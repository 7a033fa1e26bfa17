"""The AM's metric log: each task's progress and resource use over time, bounded."""

from tony_jupyter.am.metrics import MAX_SAMPLES, MetricLog


def test_a_long_run_keeps_a_bounded_series_over_the_whole_run():
    log = MetricLog()
    for i in range(20 * MAX_SAMPLES):
        log.add(1, "worker:0", float(i), {"step": i, "loss": 1 / (i + 1)}, {"cpu_percent": 50.0})
    (samples,) = log.to_json()["attempts"]["1"].values()
    assert MAX_SAMPLES // 2 <= len(samples) <= MAX_SAMPLES
    assert samples[0]["step"] == 0 and samples[-1]["step"] > 19 * MAX_SAMPLES
    steps = [s["step"] for s in samples]
    assert steps == sorted(steps)


def test_samples_keep_numbers_and_resources_by_attempt_and_task():
    log = MetricLog()
    gpu = {"index": 0, "utilization": 87.0, "memory_used_mb": 3000.0, "memory_total_mb": 16e3}
    log.add(1, "worker:0", 1.0, {"step": 3, "loss": 0.5, "note": "text", "ok": True}, None)
    log.add(2, "chief:0", 2.0, {}, {"cpu_percent": 99.5, "rss_bytes": 1 << 20, "gpus": [gpu]})
    got = log.to_json()["attempts"]
    assert got["1"]["worker:0"] == [{"t": 1.0, "step": 3, "loss": 0.5}]
    assert got["2"]["chief:0"] == [
        {
            "t": 2.0,
            "cpu_percent": 99.5,
            "rss_bytes": 1 << 20,
            "gpus": [{"index": 0, "utilization": 87.0, "memory_used_mb": 3000.0}],
        }
    ]
