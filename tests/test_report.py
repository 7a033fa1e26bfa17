"""tony_jupyter.report(): progress from any training loop, through the same heartbeat as the
Keras progress() callback, into the widget's bar and label and the chief's TensorBoard."""

import pytest

import tony_jupyter
from tony_jupyter import runtime
from tony_jupyter.widgets import render


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(runtime, "_progress", {})
    monkeypatch.setattr(runtime, "_scalars", runtime._StepScalars())


def test_report_merges_steps_and_metrics_for_the_widget(fresh):
    np = pytest.importorskip("numpy")
    tony_jupyter.report(step=10, loss=np.float32(0.5), total_steps=40)
    tony_jupyter.report(step=20, accuracy=0.75)  # merged: the loss stays until reported again
    p = runtime.current_progress()
    assert (p["step"], p["loss"], p["accuracy"], p["total_steps"]) == (20, 0.5, 0.75, 40)
    assert render.progress_fraction(p) == 0.5
    assert render.progress_label(p) == "step 20/40 · loss 0.5 · accuracy 0.75"


def test_report_takes_framework_scalars(fresh):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    tony_jupyter.report(step=1, loss=torch.tensor(0.25), many=torch.tensor([1.0, 2.0]))
    p = runtime.current_progress()
    assert p["loss"] == 0.25 and isinstance(p["many"], str)  # a tensor of many values as text


def test_the_chiefs_reports_become_tensorboard_scalars(fresh, monkeypatch, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setenv("TONY_TASK_ID", "worker:0")
    monkeypatch.setenv("TONY_CHIEF", "worker:0")
    monkeypatch.setenv("TONY_TENSORBOARD_DIR", str(tmp_path))
    for step in (1, 2, 3):
        tony_jupyter.report(step=step, loss=1.0 / step, total_steps=3)
    runtime._scalars.writer.flush()
    acc = EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    assert [(e.step, round(e.value, 3)) for e in acc.Scalars("step_loss")] == [
        (1, 1.0),
        (2, 0.5),
        (3, 0.333),
    ]
    assert "step_total_steps" not in acc.Tags()["scalars"]
