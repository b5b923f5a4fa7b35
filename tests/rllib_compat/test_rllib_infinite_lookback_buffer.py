"""RLlib's own InfiniteLookbackBuffer tests, ported to tfrl.

Ported from `rllib/env/tests/test_infinite_lookback_buffer.py` at ray-project/ray commit
392c14a053f3649fd8476a10f36aca1f8ee665b1. Covers: test_append_and_pop, test_complex_structs,
test_lookback, test_get_with_lookback, test_get_with_lookback_and_fill,
test_get_with_fill_and_neg_indices_into_lookback_buffer, test_get_with_fill_0_and_zero_hot,
test_get_with_complex_space, test_set, test_set_with_complex_space.

RLlib's `self.assertTrue(len(buffer), n)` lines (always true) are kept as the equality
they mean to assert where it holds, `assert len(buffer) == n`.
"""

import gymnasium as gym
import numpy as np
import pytest

from compat_helpers import check
from tfrl.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from tfrl.utils.spaces.space_utils import batch, get_dummy_batch_for_space

RLLIB_PATH = "rllib/env/tests/test_infinite_lookback_buffer.py"
RLLIB_COMMIT = "392c14a053f3649fd8476a10f36aca1f8ee665b1"

SPACE = gym.spaces.Dict({
    "a": gym.spaces.Discrete(4),
    "b": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
    "c": gym.spaces.Tuple([
        gym.spaces.MultiDiscrete([2, 3]),
        gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
    ]),
})
SPACE.seed(0)


def _item(value):
    return {
        "a": value,
        "b": np.full((2, 3), value, np.float32),
        "c": (np.array([value, value]), np.array([value], np.float32)),
    }


BUFFER_0 = _item(0)
BUFFER_0_ONE_HOT = {
    "a": np.array([0.0, 0.0, 0.0, 0.0], np.float32),
    "b": np.array([[0, 0, 0], [0, 0, 0]], np.float32),
    "c": (np.array([0, 0, 0, 0, 0]), np.array([0], np.float32)),
}
BUFFER_1 = _item(1)
BUFFER_2 = _item(2)
BUFFER_3 = _item(3)


def test_append_and_pop():
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3])
    assert len(buffer) == 4
    buffer.append(4)
    assert len(buffer) == 5
    buffer.append(5)
    assert len(buffer) == 6
    buffer.pop()
    assert len(buffer) == 5
    buffer.pop()
    assert len(buffer) == 4
    buffer.append(10)
    assert len(buffer) == 5
    check(buffer.data, [0, 1, 2, 3, 10])
    buffer.finalize()

    # Data can still be added after finalizing.
    buffer.append(11)
    assert buffer.get(indices=-1) == 11
    test = buffer.get(indices=[-2, -1])
    assert np.all(test == np.array([10, 11]))
    assert isinstance(test, np.ndarray)

    buffer.extend([12, 13])
    assert buffer.get(indices=-1) == 13
    test = buffer.get(indices=[-2, -1])
    assert np.all(test == np.array([12, 13]))
    assert isinstance(test, np.ndarray)

    buffer.pop()
    assert buffer.get(indices=-1) == 12
    assert buffer.get(indices=0) == 0


def test_complex_structs():
    buffer = InfiniteLookbackBuffer(data=[SPACE.sample() for _ in range(4)])
    assert len(buffer) == 4
    buffer.append(SPACE.sample())
    assert len(buffer) == 5
    buffer.append(SPACE.sample())
    assert len(buffer) == 6

    buffer.finalize()

    assert isinstance(buffer.data, dict)
    assert isinstance(buffer.data["a"], np.ndarray)
    assert isinstance(buffer.data["b"], np.ndarray)
    assert isinstance(buffer.data["c"], tuple)
    assert isinstance(buffer.data["c"][0], np.ndarray)
    assert isinstance(buffer.data["c"][1], np.ndarray)


def test_lookback():
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3], lookback=2)
    assert len(buffer) == 2
    check(buffer.get(), [2, 3])
    buffer.append(4)
    assert len(buffer) == 3
    buffer.append(5)
    assert len(buffer) == 4
    check(buffer.get(), [2, 3, 4, 5])
    buffer.pop()
    assert len(buffer) == 3
    check(buffer.get(), [2, 3, 4])


def test_get_with_lookback():
    """`get` and `[]` with a lookback of 2."""
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3, 4], lookback=2)

    for finalized in [False, True]:
        if finalized:
            buffer.finalize()

        assert len(buffer) == 3
        # No args: all in-episode items.
        check(buffer.get(), [2, 3, 4])
        check(buffer[:], [2, 3, 4])
        # Single negative indices (reach into the lookback).
        check(buffer.get(-1), 4)
        check(buffer[-1], 4)
        check(buffer.get(-2), 3)
        check(buffer[-2], 3)
        check(buffer.get(-4), 1)
        check(buffer[-4], 1)
        check(buffer.get([-4]), [1])
        check(buffer[-4:-3], [1])
        for bad in (-6, -1000):
            with pytest.raises(IndexError):
                buffer.get(bad)
            with pytest.raises(IndexError):
                buffer[bad]
        # Single positive indices (no lookback).
        check(buffer.get(0), 2)
        check(buffer[0], 2)
        check(buffer.get(1), 3)
        check(buffer[1], 3)
        check(buffer.get(2), 4)
        check(buffer[2], 4)
        check(buffer.get([2]), [4])
        check(buffer[2:3], [4])
        for bad in (3, 1000):
            with pytest.raises(IndexError):
                buffer.get(bad)
            with pytest.raises(IndexError):
                buffer[bad]
        # Lists of negative indices.
        check(buffer.get([-4, -5]), [1, 0])
        check(buffer.get([-1]), [4])
        check(buffer[-1:], [4])
        check(buffer.get([-5]), [0])
        check(buffer[-5:-4], [0])
        for bad in ([-6], [-1, -6], [-1000]):
            with pytest.raises(IndexError):
                buffer.get(bad)
        # Lists of positive indices.
        check(buffer.get([1, 0, 2]), [3, 2, 4])
        check(buffer.get([0, 2, 1]), [2, 4, 3])
        for bad in ([6], [1, 6], [1000]):
            with pytest.raises(IndexError):
                buffer.get(bad)
        # Mixed.
        check(buffer.get([1, 0, -2]), [3, 2, 3])
        check(buffer.get([-3, 1, -1]), [2, 3, 4])
        # Slices [None:...].
        check(buffer.get(slice(None, None)), [2, 3, 4])
        check(buffer.get(slice(None, 2)), [2, 3])
        check(buffer[:2], [2, 3])
        check(buffer.get(slice(3)), [2, 3, 4])
        check(buffer[:3], [2, 3, 4])
        check(buffer.get(slice(None, -1)), [2, 3])
        check(buffer[:-1], [2, 3])
        check(buffer.get(slice(None, -2)), [2])
        check(buffer[:-2], [2])
        # Slices [...:None] and [...:past the end].
        check(buffer.get(slice(2, None)), [4])
        check(buffer[2:], [4])
        check(buffer.get(slice(2, 5)), [4])
        check(buffer[2:5], [4])
        check(buffer.get(slice(1, None)), [3, 4])
        check(buffer[1:], [3, 4])
        check(buffer.get(slice(1, 5)), [3, 4])
        check(buffer[1:5], [3, 4])
        check(buffer.get(slice(-1, None)), [4])
        check(buffer[-1:], [4])
        check(buffer.get(slice(-1, 5)), [4])
        check(buffer[-1:5], [4])
        check(buffer.get(slice(-4, None)), [1, 2, 3, 4])
        check(buffer[-4:], [1, 2, 3, 4])
        check(buffer.get(slice(-4, 5)), [1, 2, 3, 4])
        check(buffer[-4:5], [1, 2, 3, 4])
        # Slices [-n:-m].
        check(buffer.get(slice(-2, -1)), [3])
        check(buffer[-2:-1], [3])
        check(buffer.get(slice(-3, -1)), [2, 3])
        check(buffer[-3:-1], [2, 3])
        check(buffer.get(slice(-4, -2)), [1, 2])
        check(buffer[-4:-2], [1, 2])
        check(buffer.get(slice(-4, -1)), [1, 2, 3])
        check(buffer[-4:-1], [1, 2, 3])
        check(buffer.get(slice(-5, -1)), [0, 1, 2, 3])
        check(buffer[-5:-1], [0, 1, 2, 3])
        check(buffer.get(slice(-6, -2)), [0, 1, 2])
        check(buffer[-6:-2], [0, 1, 2])
        # Slices [+n:+m].
        check(buffer.get(slice(0, 1)), [2])
        check(buffer[0:1], [2])
        check(buffer.get(slice(0, 2)), [2, 3])
        check(buffer[0:2], [2, 3])
        check(buffer.get(slice(0, 3)), [2, 3, 4])
        check(buffer[0:3], [2, 3, 4])
        check(buffer.get(slice(1, 2)), [3])
        check(buffer[1:2], [3])
        check(buffer.get(slice(1, 3)), [3, 4])
        check(buffer[1:3], [3, 4])
        check(buffer.get(slice(2, 3)), [4])
        check(buffer[2:3], [4])
        # Slices [+n:-m].
        check(buffer.get(slice(0, -1)), [2, 3])
        check(buffer[0:-1], [2, 3])
        check(buffer.get(slice(0, -2)), [2])
        check(buffer[0:-2], [2])
        check(buffer.get(slice(1, -1)), [3])
        check(buffer[1:-1], [3])

    # Finalized: numpy arrays.
    data = buffer.get([1, 0, 2])
    assert isinstance(data, np.ndarray)
    check(data, [3, 2, 4])


def test_get_with_lookback_and_fill():
    """`fill` with a lookback of 3."""
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3, 4, 5], lookback=3,
                                    space=gym.spaces.Discrete(6))

    for finalized in [False, True]:
        if finalized:
            buffer.finalize()

        assert len(buffer) == 3

        # Single indices.
        check(buffer.get(-10, fill=10), 10)
        check(buffer.get(-3, fill=10), 3)
        check(buffer.get(-2, fill=10), 4)
        check(buffer.get(-1, fill=10), 5)
        check(buffer.get(0, fill=10), 3)
        check(buffer.get(2, fill=10), 5)
        check(buffer.get(100, fill=10), 10)

        # Left fill.
        check(buffer.get(slice(-8, None), fill=10), [10, 10, 0, 1, 2, 3, 4, 5])
        check(buffer.get(slice(-9, None), fill=10), [10, 10, 10, 0, 1, 2, 3, 4, 5])
        check(buffer.get(slice(-10, None), fill=11), [11, 11, 11, 11, 0, 1, 2, 3, 4, 5])
        check(buffer.get(slice(-10, -4), fill=11), [11, 11, 11, 11, 0, 1])
        # Start and stop left of the data.
        check(buffer.get(slice(-10, -9), fill=0), [0])
        check(buffer.get(slice(-20, -15), fill=0), [0, 0, 0, 0, 0])
        check(buffer.get(slice(-1001, -1000), fill=6), [6])
        # Start and stop right of the data.
        check(buffer.get(slice(10, 15), fill=0), [0, 0, 0, 0, 0])
        check(buffer.get(slice(15, 17), fill=0), [0, 0])
        check(buffer.get(slice(1000, 1001), fill=6), [6])
        # Right fill.
        check(buffer.get(slice(2, 8), fill=12), [5, 12, 12, 12, 12, 12])
        check(buffer.get(slice(1, 7), fill=13), [4, 5, 13, 13, 13, 13])
        check(buffer.get(slice(1, 5), fill=-14), [4, 5, -14, -14])
        # No fill needed.
        check(buffer.get(slice(-5, None), fill=999), [1, 2, 3, 4, 5])
        check(buffer.get(slice(-6, -1), fill=999), [0, 1, 2, 3, 4])
        check(buffer.get(slice(0, 2), fill=999), [3, 4])
        check(buffer.get(slice(1, None), fill=999), [4, 5])
        check(buffer.get(slice(None, 3), fill=999), [3, 4, 5])

    data = buffer.get(slice(15, 17), fill=0)
    assert isinstance(data, np.ndarray)
    check(data, [0, 0])


def test_get_with_fill_and_neg_indices_into_lookback_buffer():
    """`fill` together with `neg_index_as_lookback=True`, lookback of 4."""
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], lookback=4,
                                    space=gym.spaces.Discrete(11))
    lb = dict(neg_index_as_lookback=True)

    for finalized in [False, True]:
        if finalized:
            buffer.finalize()

        assert len(buffer) == 7

        # The lookback holds [0, 1, 2, 3].
        check(buffer.get(-1, **lb), 3)
        check(buffer.get(-2, **lb), 2)
        check(buffer.get(-3, **lb), 1)
        check(buffer.get(-4, **lb), 0)
        check(buffer.get([-1, -3], **lb), [3, 1])
        check(buffer.get(slice(-2, -1), **lb), [2])
        check(buffer.get(slice(-2, 0), **lb), [2, 3])
        check(buffer.get(slice(-2, 4), **lb), [2, 3, 4, 5, 6, 7])
        check(buffer.get(slice(-2, None), **lb), [2, 3, 4, 5, 6, 7, 8, 9, 10])
        # Left fill.
        check(buffer.get(-8, fill=10, **lb), 10)
        check(buffer.get(-800, fill=10, **lb), 10)
        check(buffer.get([-8, -1], fill=9, **lb), [9, 3])
        check(buffer.get(slice(-8, 0), fill=10, **lb), [10, 10, 10, 10, 0, 1, 2, 3])
        check(buffer.get(slice(-7, 1), fill=10, **lb), [10, 10, 10, 0, 1, 2, 3, 4])
        check(buffer.get(slice(-6, None), fill=11, **lb),
              [11, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        check(buffer.get(slice(-10, -4), fill=11, **lb), [11, 11, 11, 11, 11, 11])
        # Start and stop left of the data.
        check(buffer.get(slice(-10, -9), fill=0, **lb), [0])
        check(buffer.get(slice(-20, -15), fill=0, **lb), [0, 0, 0, 0, 0])
        check(buffer.get(slice(-1001, -1000), fill=6, **lb), [6])
        # Start and stop right of the data.
        check(buffer.get(slice(10, 15), fill=0, **lb), [0, 0, 0, 0, 0])
        check(buffer.get(slice(15, 17), fill=0, **lb), [0, 0])
        check(buffer.get(slice(1000, 1001), fill=6, **lb), [6])
        # Right fill.
        check(buffer.get(8, fill=10, **lb), 10)
        check(buffer.get(800, fill=10, **lb), 10)
        check(buffer.get([8, 1], fill=9, **lb), [9, 5])
        check(buffer.get(slice(-2, 8), fill=12, **lb), [2, 3, 4, 5, 6, 7, 8, 9, 10, 12])
        check(buffer.get(slice(-1, 9), fill=13, **lb), [3, 4, 5, 6, 7, 8, 9, 10, 13, 13])
        check(buffer.get(slice(-1, 5), fill=-14, **lb), [3, 4, 5, 6, 7, 8])
        # No fill needed.
        check(buffer.get(slice(-1, None), fill=999, **lb), [3, 4, 5, 6, 7, 8, 9, 10])
        check(buffer.get(slice(-4, -1), fill=999, **lb), [0, 1, 2])
        check(buffer.get(slice(-1, 2), fill=999, **lb), [3, 4, 5])

    data = buffer.get(slice(-17, -15), fill=0, **lb)
    assert isinstance(data, np.ndarray)
    check(data, [0, 0])
    data = buffer.get([-3, -1], fill=0, **lb)
    assert isinstance(data, np.ndarray)
    check(data, [1, 3])


def test_get_with_fill_0_and_zero_hot():
    """fill=0 with one_hot_discrete gives all-zero ("zero-hot") vectors."""
    buffer = InfiniteLookbackBuffer(data=[0, 1, 0, 1], space=gym.spaces.Discrete(2))

    for finalized in [False, True]:
        if finalized:
            buffer.finalize()

        assert len(buffer) == 4

        check(buffer.get(4, fill=0, one_hot_discrete=True), [0, 0])
        check(buffer.get(-1, neg_index_as_lookback=True, fill=0, one_hot_discrete=True),
              [0, 0])


def test_get_with_complex_space():
    """Nested items built with get_dummy_batch_for_space, filled and one-hot encoded."""
    buffer = InfiniteLookbackBuffer(
        data=[get_dummy_batch_for_space(space=SPACE, batch_size=0, fill_value=float(i))
              for i in range(4)],
        lookback=2,
        space=SPACE,
    )

    for finalized in [False, True]:
        if finalized:
            buffer.finalize()

            def batch_(s):
                return batch(s)
        else:

            def batch_(s):
                return s

        assert len(buffer) == 2

        check(buffer.get(-1), BUFFER_3)
        check(buffer.get(-2), BUFFER_2)
        check(buffer.get(-3), BUFFER_1)
        check(buffer.get(-4), BUFFER_0)
        check(buffer.get(-5, fill=0.0), BUFFER_0)
        check(buffer.get([-5, 5], fill=0.0), batch_([BUFFER_0, BUFFER_0]))
        check(buffer.get([-5, 1], fill=0.0), batch_([BUFFER_0, BUFFER_3]))
        check(buffer.get([1, -10], fill=0.0), batch_([BUFFER_3, BUFFER_0]))
        check(buffer.get([-10], fill=0.0, one_hot_discrete=True),
              batch_([BUFFER_0_ONE_HOT]))
        check(buffer.get(slice(0, 1), fill=0.0), batch_([BUFFER_2]))
        check(buffer.get(slice(1, 3), fill=0.0), batch_([BUFFER_3, BUFFER_0]))
        check(buffer.get(slice(-10, -12), fill=0.0), batch_([BUFFER_0, BUFFER_0]))
        check(buffer.get(slice(-10, -12), fill=0.0, neg_index_as_lookback=True),
              batch_([BUFFER_0, BUFFER_0]))
        check(buffer.get(slice(100, 98), fill=0.0, neg_index_as_lookback=True),
              batch_([BUFFER_0, BUFFER_0]))
        check(buffer.get(slice(100, 98), fill=0.0), batch_([BUFFER_0, BUFFER_0]))


def test_set():
    buffer = InfiniteLookbackBuffer(data=[0, 1, 2, 3, 4, 5, 6, 7], lookback=2)
    # Through item assignment.
    buffer[0:2] = [200, 300]
    check(buffer.data, [0, 1, 200, 300, 4, 5, 6, 7])
    buffer[-1] = 700
    check(buffer.data, [0, 1, 200, 300, 4, 5, 6, 700])
    buffer[-3] = 500
    check(buffer.data, [0, 1, 200, 300, 4, 500, 6, 700])
    buffer[-4:-2] = [400, 5000]
    check(buffer.data, [0, 1, 200, 300, 400, 5000, 6, 700])
    buffer[0] = 2000
    check(buffer.data, [0, 1, 2000, 300, 400, 5000, 6, 700])
    buffer[-4:-1] = [400, 5000, 60]
    check(buffer.data, [0, 1, 2000, 300, 400, 5000, 60, 700])

    # Back to the start values (lookback untouched).
    buffer[:] = [2, 3, 4, 5, 6, 7]
    check(buffer.data, [0, 1, 2, 3, 4, 5, 6, 7])

    # Through `set`.
    buffer.set([200, 300], at_indices=slice(0, 2))
    check(buffer.data, [0, 1, 200, 300, 4, 5, 6, 7])
    buffer.set(700, at_indices=-1)
    check(buffer.data, [0, 1, 200, 300, 4, 5, 6, 700])
    buffer.set(500, at_indices=-3)
    check(buffer.data, [0, 1, 200, 300, 4, 500, 6, 700])
    buffer.set([400, 5000], at_indices=slice(-4, -2))
    check(buffer.data, [0, 1, 200, 300, 400, 5000, 6, 700])
    buffer.set(2000, at_indices=0)
    check(buffer.data, [0, 1, 2000, 300, 400, 5000, 6, 700])
    buffer.set([400, 5000, 60], at_indices=slice(-4, -1))
    check(buffer.data, [0, 1, 2000, 300, 400, 5000, 60, 700])
    # Out of range.
    with pytest.raises(IndexError):
        buffer.set(100, at_indices=-100)
    with pytest.raises(IndexError):
        buffer.set(100, at_indices=-3, neg_index_as_lookback=True)
    with pytest.raises(IndexError):
        buffer.set(100, at_indices=-9, neg_index_as_lookback=False)
    with pytest.raises(IndexError):
        buffer.set(100, at_indices=6)
    with pytest.raises(IndexError):
        buffer.set(100, at_indices=100)

    buffer.set([2, 3, 4, 5, 6, 7])
    check(buffer.data, [0, 1, 2, 3, 4, 5, 6, 7])

    # Into the lookback.
    buffer.set([100, 200, 300], at_indices=slice(-1, 2), neg_index_as_lookback=True)
    check(buffer.data, [0, 100, 200, 300, 4, 5, 6, 7])
    buffer.set(-999, at_indices=-2, neg_index_as_lookback=True)
    check(buffer.data, [-999, 100, 200, 300, 4, 5, 6, 7])
    buffer.set([-998, 1000], at_indices=slice(-2, 0), neg_index_as_lookback=True)
    check(buffer.data, [-998, 1000, 200, 300, 4, 5, 6, 7])
    buffer.set(2000, at_indices=0, neg_index_as_lookback=True)
    check(buffer.data, [-998, 1000, 2000, 300, 4, 5, 6, 7])
    # Negative steps.
    buffer.set([-1, -4], at_indices=slice(3, 1, -1), neg_index_as_lookback=True)
    check(buffer.data, [-998, 1000, 2000, 300, -4, -1, 6, 7])
    buffer.set([-10, -40, -30], at_indices=slice(3, 0, -1))
    check(buffer.data, [-998, 1000, 2000, -30, -40, -10, 6, 7])
    # New data larger than the slice.
    with pytest.raises(IndexError):
        buffer.set([100, 101], at_indices=slice(0, 1))


def test_set_with_complex_space():
    buffer = InfiniteLookbackBuffer(
        data=[get_dummy_batch_for_space(space=SPACE, batch_size=0, fill_value=float(i))
              for i in range(10)],
        lookback=2,
        space=SPACE,
    )
    buffer[0:2] = [BUFFER_1, BUFFER_3]
    # The lookback is untouched.
    check(buffer.data[0], BUFFER_0)
    check(buffer.data[1], BUFFER_1)
    # The in-episode items were set.
    check(buffer.data[2], BUFFER_1)
    check(buffer.data[3], BUFFER_3)
