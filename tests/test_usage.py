"""Each task's live use: sparklines of its samples, the job's GPUs-idle share (named when it
stays high), and the widget's bounded series taken from snapshots (usage.py)."""

import re
import tracemalloc

from tony_jupyter.core.protocol import GpuUse, JobSnapshot, JobState, TaskState, TaskView
from tony_jupyter.core.usage import (
    IDLE_MIN_SPAN_S,
    IDLE_WINDOW_S,
    UsageHistory,
    gpu_idle,
    sparkline_svg,
    values,
)


def gpu_sample(t: float, *utils: float) -> dict:
    return {"t": t, "gpus": [{"index": i, "utilization": u} for i, u in enumerate(utils)]}


def points(svg: str) -> list[tuple[float, float]]:
    got = re.search(r"points='([^']*)'", svg)
    assert got, svg
    return [tuple(map(float, p.split(","))) for p in got.group(1).split()]


def test_a_sparkline_draws_its_values_oldest_left_against_100_for_percentages():
    svg = sparkline_svg([0.0, 50.0, 100.0], "cpu")
    xs, ys = zip(*points(svg), strict=True)
    assert xs == (0.0, 32.0, 64.0)
    assert ys[0] > ys[1] > ys[2]  # higher use is higher up
    assert abs(ys[1] - (ys[0] + ys[2]) / 2) < 0.11  # 50% half way up: the scale is 0-100
    low = points(sparkline_svg([1.0, 2.0], "cpu"))
    assert all(y > 12 for _, y in low)  # 2% of a core is drawn near the bottom, not the top
    assert "CPU: now 100%, peak 100%" in svg
    memory = sparkline_svg([100 * 2**20, 300 * 2**20], "memory")
    assert "memory: now 300 MiB, peak 300 MiB" in memory


def test_a_sparkline_needs_two_values_and_reads_samples_defensively():
    assert sparkline_svg([], "cpu") == "" and sparkline_svg([5.0], "cpu") == ""
    samples = [
        {"t": 1, "cpu_percent": 10},
        {"t": 2, "cpu_percent": "a lot"},  # a task sent nonsense: skipped
        {"t": 3, "cpu_percent": float("nan")},
        {"t": 4},
        "not a sample",
        {"t": 5, "cpu_percent": 30, "gpus": "none"},
    ]
    assert values(samples, "cpu") == [10.0, 30.0]
    assert values(samples, "gpu") == []
    gpus = [gpu_sample(1, 20, 40), {"t": 2, "gpus": [{"memory_used_mb": 512}, {}]}]
    assert values(gpus, "gpu") == [30.0] and values(gpus, "gpu_memory") == [512.0]


def test_the_gpus_idle_share_is_named_once_it_stays_high():
    # two tasks, one GPU each, a sample a second: idle (5%) for all but the last 20 s
    busy_from = 100.0
    series = {
        task: [gpu_sample(t, 5.0 if t < busy_from else 90.0) for t in range(0, 121)]
        for task in ("worker:0", "worker:1")
    }
    idle = gpu_idle(series)
    assert idle is not None and idle.gpus == 2
    assert idle.seconds == IDLE_WINDOW_S
    assert abs(idle.share - 100 / 121) < 0.01
    assert idle.high
    assert idle.text().startswith("GPUs idle 83% of the last 2m 00s (2 GPU(s)")
    assert "input pipeline" in idle.text()


def test_a_busy_job_a_short_dip_and_a_job_without_gpus_are_not_named():
    busy = {"worker:0": [gpu_sample(t, 95.0) for t in range(200)]}
    assert gpu_idle(busy) is not None and not gpu_idle(busy).high
    # idle, but only for the last 10 s: no share that has stayed high yet
    dip = {"worker:0": [gpu_sample(t, 0.0) for t in range(int(IDLE_MIN_SPAN_S) // 3)]}
    assert gpu_idle(dip).share == 1.0 and not gpu_idle(dip).high
    # an old idle stretch past the window does not count against a busy present
    old = {"worker:0": [gpu_sample(t, 0.0 if t < 100 else 95.0) for t in range(400)]}
    assert gpu_idle(old).share == 0.0
    assert gpu_idle({"worker:0": [{"t": 1, "cpu_percent": 50}]}) is None
    assert gpu_idle({}) is None


def snapshot(beat: float, cpu: float, attempt: int = 1, gpus: tuple = ()) -> JobSnapshot:
    tasks = tuple(
        TaskView(
            f"worker:{i}", "worker", i, True, TaskState.RUNNING,
            last_heartbeat=beat, cpu_percent=cpu + i, rss_bytes=(100 + i) << 20, gpus=gpus,
        )
        for i in range(2)
    )  # fmt: skip
    return JobSnapshot("job-1", state=JobState.RUNNING, attempt=attempt, now=beat, tasks=tasks)


def test_the_widget_history_keeps_one_sample_a_beat_bounded_and_per_attempt():
    h = UsageHistory(kept=10)
    h.add(snapshot(1.0, 10.0))
    h.add(snapshot(1.0, 10.0))  # the same beat again: nothing new
    assert len(h.series["worker:0"]) == 1
    for beat in range(2, 30):
        h.add(snapshot(float(beat), 10.0 + beat))
    assert len(h.series["worker:0"]) == 10  # the newest ten
    assert h.series["worker:1"][-1]["cpu_percent"] == 40.0
    sparks = h.sparklines("worker:0")
    assert sparks["cpu"] and sparks["memory"] and not sparks["gpu"]
    h.add(snapshot(31.0, 5.0, attempt=2))  # a new attempt starts afresh
    assert len(h.series["worker:0"]) == 1
    assert h.sparklines("worker:9") == {"cpu": "", "memory": "", "gpu": "", "gpu_memory": ""}


def test_the_widget_history_names_idle_gpus_and_its_memory_stays_flat():
    h = UsageHistory()
    idle_gpu = (GpuUse(0, utilization=2.0, memory_used_mb=800.0),)
    for beat in range(60):
        h.add(snapshot(float(beat), 50.0, gpus=idle_gpu))
    assert h.gpu_idle().high
    tracemalloc.start()
    for beat in range(60, 300):  # past its bound: what it holds no longer grows
        h.add(snapshot(float(beat), 50.0, gpus=idle_gpu))
    before = tracemalloc.take_snapshot()
    for beat in range(300, 1300):
        h.add(snapshot(float(beat), 50.0, gpus=idle_gpu))
    grown = tracemalloc.take_snapshot().compare_to(before, "filename")
    tracemalloc.stop()
    assert sum(d.size_diff for d in grown if d.size_diff > 0) < 64 * 1024
