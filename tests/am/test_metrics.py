"""The AM's metric log: each task's progress and resource use over time, bounded, and
downsampled as it ages: a stretched clock stands for a day-long job."""

from tony_jupyter.am.events import EventLog
from tony_jupyter.am.metrics import MAX_SAMPLES, RECENT_MAX, RECENT_S, MetricLog
from tony_jupyter.core.protocol import Event, EventKind, Resources

DAY_S = 24 * 3600


def test_a_long_run_keeps_a_bounded_series_over_the_whole_run():
    log = MetricLog()
    for i in range(20 * MAX_SAMPLES):
        log.add(
            1, "worker:0", float(i), {"step": i, "loss": 1 / (i + 1)}, Resources(cpu_percent=50.0)
        )
    (samples,) = log.to_json()["attempts"]["1"].values()
    assert MAX_SAMPLES // 2 <= len(samples) <= MAX_SAMPLES
    assert samples[-RECENT_MAX // 2 :] == [  # the last ones: every sample
        {"t": float(i), "step": i, "loss": 1 / (i + 1), "cpu_percent": 50.0}
        for i in range(20 * MAX_SAMPLES - RECENT_MAX // 2, 20 * MAX_SAMPLES)
    ]
    assert samples[0]["step"] == 0 and samples[-1]["step"] > 19 * MAX_SAMPLES
    steps = [s["step"] for s in samples]
    assert steps == sorted(steps)


def test_samples_keep_numbers_and_resources_by_attempt_and_task():
    log = MetricLog()
    gpu = {"index": 0, "utilization": 87.0, "memory_used_mb": 3000.0, "memory_total_mb": 16e3}
    log.add(1, "worker:0", 1.0, {"step": 3, "loss": 0.5, "note": "text", "ok": True}, None)
    used = Resources.parse({"cpu_percent": 99.5, "rss_bytes": 1 << 20, "gpus": [gpu]})
    log.add(2, "chief:0", 2.0, {}, used)
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


def test_a_day_long_job_keeps_every_recent_point_and_a_coarser_past_in_flat_memory():
    """24 h of a 1 s heartbeat (86,400 samples) on a stretched clock: at every hour the series
    is within its bound, holds every sample of the last RECENT_S seconds, reaches back to the
    job's first sample, and is coarser the older it is."""
    log = MetricLog()
    sizes = []
    for t in range(DAY_S):
        log.add(1, "worker:0", float(t), {"step": t, "loss": 1.0}, Resources(rss_bytes=1 << 20))
        if t % 3600 == 3599:
            (samples,) = log.to_json()["attempts"]["1"].values()
            sizes.append(len(samples))
            times = [s["t"] for s in samples]
            assert times == sorted(times) and times[0] == 0.0 and times[-1] == float(t)
            recent = [x for x in times if x > t - RECENT_S]
            assert recent == [float(x) for x in range(t - int(RECENT_S) + 1, t + 1)]
            older = [x for x in times if x <= t - RECENT_S]
            gaps = [b - a for a, b in zip(older, older[1:], strict=False)]
            quarter = max(1, len(gaps) // 4)
            # the oldest quarter of the past is at least as coarse as its newest quarter
            assert sum(gaps[:quarter]) / quarter >= sum(gaps[-quarter:]) / quarter
    assert max(sizes) <= MAX_SAMPLES
    assert max(sizes[1:]) - min(sizes[1:]) <= MAX_SAMPLES // 2  # flat after the first hour


def test_the_event_log_holds_its_last_events_and_reads_older_ones_from_its_file(tmp_path):
    events = EventLog(tmp_path / "events.jsonl", tail=8)
    for i in range(1000):
        events.append(Event(i, 0.0, EventKind.CELL))
    assert len(events) == 1000 and len(events._tail) == 8  # what stays in memory
    assert [e.seq for e in events[0:]] == list(range(1000))  # a re-attach from the start
    assert [e.seq for e in events[990:]] == list(range(990, 1000))
    assert [e.seq for e in events[500:503]] == [500, 501, 502]
    assert events[0].seq == 0 and events[-1].seq == 999 and events[1000:] == []
    events.close()
