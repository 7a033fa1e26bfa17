import threading

import cloudpickle
import pytest

from tony_jupyter.core.bundle import free_names, make_bundle, split_last_expression
from tony_jupyter.core.errors import BundleError


def test_free_names_are_reads_not_bound_in_the_cell():
    src = """
import tensorflow as tf
x = data * 2
def f(a):
    return [c for c in range(a + scale) if c > thresh]
model.fit(x)
print(len(y))
"""
    assert free_names(src) == ["data", "model", "y", "scale", "thresh"]


def test_bundle_ships_only_what_the_cell_reads():
    ns = {"data": [1, 2], "unrelated": object(), "scale": 3}
    b = make_bundle("total = sum(data) * scale", ns)
    assert b.pushed == ("data", "scale")
    assert cloudpickle.loads(b.names) == {"data": [1, 2], "scale": 3}


def test_functions_defined_in_the_notebook_travel_by_value():
    def build(n):
        return list(range(n))

    b = make_bundle("build(3)", {"build": build})
    assert cloudpickle.loads(b.names)["build"](3) == [0, 1, 2]


def test_syntax_error_names_the_line():
    with pytest.raises(BundleError, match="syntax error in the cell at line 2") as e:
        make_bundle("x = 1\ny = (\n", {})
    assert "nothing was submitted" in str(e.value)


def test_unpicklable_name_is_named():
    with pytest.raises(BundleError) as e:
        make_bundle("lock.acquire()", {"lock": threading.Lock()})
    assert "cannot ship 'lock'" in str(e.value) and "Create it inside the cell" in str(e.value)


def test_undefined_name_is_named():
    with pytest.raises(BundleError, match="the cell uses 'missing_thing', not defined"):
        make_bundle("missing_thing + 1", {})


def test_last_expression_is_split_off():
    body, last = split_last_expression("a = 1\na + 1")
    assert len(body.body) == 1 and last is not None
    body, last = split_last_expression("a = 1")
    assert last is None
