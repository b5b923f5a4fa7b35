"""pack/unpack round trips and corrupt input."""

import numpy as np
import pytest

from tfrl.utils.compression import is_compressed, pack, unpack, unpack_if_needed


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.uint8).reshape(3, 4),
    np.linspace(0, 1, 7, dtype=np.float32),
    np.array(3.5),
    np.zeros((0, 2), np.int64),
])
def test_round_trip_keeps_dtype_and_shape(array):
    packed = pack(array)
    assert is_compressed(packed) and not is_compressed(array)
    out = unpack(packed)
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)
    np.testing.assert_array_equal(unpack_if_needed(array), array)


def test_object_arrays_are_refused():
    with pytest.raises(TypeError, match="dtype object"):
        pack(np.array([{}, {}], dtype=object))


def test_corrupt_and_foreign_data():
    packed = pack(np.arange(100))
    with pytest.raises(ValueError, match="corrupt packed array"):
        unpack(packed[:-10])
    with pytest.raises(ValueError, match="expects bytes produced by"):
        unpack(b"hello")
