"""The `check` stand-in compares as RLlib's does: it fails where RLlib's fails."""

import numpy as np
import pytest
import tensorflow as tf

from compat_helpers import check


def test_check_passes_equal_nested_structures():
    check({"a": [1, (2.0, np.array([3.0, 4.0]))], "b": True, "c": None, "d": "x"},
          {"a": [1, (2.0000001, [3.0, 4.0])], "b": np.bool_(True), "c": None, "d": "x"})
    check(tf.constant([1.0, 2.0]), np.array([1.0, 2.0]))
    check(np.array(["a", "b"]), np.array(["a", "b"]))


@pytest.mark.parametrize("x,y,kwargs", [
    ({"a": 1}, {"a": 1, "b": 2}, {}),
    ({"a": 1, "b": 2}, {"a": 1}, {}),
    ([1, 2], [1, 2, 3], {}),
    (1.0, 1.001, {}),
    (1.0, 1.001, {"decimals": 4}),
    (np.array([1.0, 2.0]), np.array([1.0, 2.5]), {"atol": 0.1}),
    (True, False, {}),
    ("x", "y", {}),
    (np.array(["a"]), np.array(["b"]), {}),
])
def test_check_fails_on_differences(x, y, kwargs):
    with pytest.raises(AssertionError):
        check(x, y, **kwargs)


def test_check_false_inverts():
    check(1.0, 2.0, false=True)
    check({"a": [1]}, {"a": [2]}, false=True)
    with pytest.raises(AssertionError):
        check(1.0, 1.0, false=True)
    with pytest.raises(AssertionError):
        check(np.array(["a"]), np.array(["a"]), false=True)


def test_check_tolerances():
    check(100.0, 100.4, rtol=0.01)
    check(1.0, 1.04, atol=0.05)
    with pytest.raises(AssertionError):
        check(1.0, 1.06, atol=0.05)
