"""tfrl.utils.checks.check_int: the one integer check of user-given values."""

import numpy as np
import pytest

from tfrl.utils.checks import check_int


@pytest.mark.parametrize("value, minimum, expected", [
    (3, 1, 3), (0, 0, 0), (np.int64(5), 1, 5), (np.uint8(2), 2, 2)])
def test_integers_at_or_above_the_minimum_pass_as_python_ints(value, minimum, expected):
    out = check_int(value, "f(n=...)", minimum)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [True, False, 2.0, "3", None, np.float32(1.0), 0, -1])
def test_other_values_name_what_was_received(value):
    with pytest.raises(ValueError) as info:
        check_int(value, "ReplayBuffer(capacity=...)", 1)
    assert str(info.value) == f"ReplayBuffer(capacity=...) must be an int >= 1; received {value!r}."


def test_note_follows_the_bound():
    with pytest.raises(ValueError, match=r"^JsonWriter: max_file_size must be an int >= 1 \(bytes\); "
                                         r"received 0\.$"):
        check_int(0, "JsonWriter: max_file_size", 1, "bytes")
