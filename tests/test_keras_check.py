"""A plain `pip install tensorflow` has Keras 3 and no tf-keras: a job whose tasks would run
tf.keras as Keras 2 is refused before anything starts, naming the fix, instead of every task
dying with "Keras cannot be imported" once the job is running."""

import pytest

from tony_jupyter.core.errors import SpecError
from tony_jupyter.options import parse_job_args


def test_tasks_that_would_need_tf_keras_are_refused_before_submitting(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tf_keras" else real(name, *a)
    )
    with pytest.raises(
        SpecError, match="tf-keras is not installed.*pip install tf-keras.*--keras3"
    ):
        parse_job_args("--workers 2")
    _, spec = parse_job_args("--workers 2 --keras3")  # Keras 3 asks for nothing more
    assert spec.legacy_keras is False
