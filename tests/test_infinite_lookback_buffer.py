"""Tests for InfiniteLookbackBuffer and tfrl.utils.spaces helpers."""

import pickle

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from tfrl.utils.spaces import (
    batch,
    fill_value_for_space,
    one_hot,
    same_structure,
    structs_equal,
    to_numpy_batch,
    unbatch,
)

DICT_SPACE = gym.spaces.Dict(
    {
        "a": gym.spaces.Discrete(3),
        "b": gym.spaces.MultiDiscrete([2, 3]),
        "c": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
    }
)


def _maybe_finalize(buffer, finalized):
    if finalized:
        buffer.finalize()
    return buffer


def _dict_item(a, b0, b1, c0):
    return {"a": a, "b": np.array([b0, b1]), "c": np.array([c0, -c0], np.float32)}


# ---- Index model --------------------------------------------------------------------


@pytest.mark.parametrize("finalized", [False, True])
def test_seed_lookback_examples(finalized):
    # Seed: observations [4..9], lookback [4, 5, 6], ts=0 item is 7.
    buffer = _maybe_finalize(InfiniteLookbackBuffer([4, 5, 6, 7, 8, 9], lookback=3), finalized)
    assert len(buffer) == 3
    assert buffer.len_incl_lookback() == 6
    assert buffer.get(-1, neg_index_as_lookback=True) == 6
    np.testing.assert_array_equal(buffer.get(slice(-2, 1), neg_index_as_lookback=True), [5, 6, 7])
    # Seed: [10..14] with lookback 2 and fill.
    buffer = _maybe_finalize(InfiniteLookbackBuffer([10, 11, 12, 13, 14], lookback=2), finalized)
    np.testing.assert_array_equal(buffer.get(slice(-7, -2), fill=0.0), [0, 0, 10, 11, 12])


@pytest.mark.parametrize("finalized", [False, True])
def test_index_mapping(finalized):
    buffer = _maybe_finalize(InfiniteLookbackBuffer([4, 5, 6, 7, 8, 9], lookback=3), finalized)
    np.testing.assert_array_equal(buffer.get(), [7, 8, 9])
    assert buffer.get(0) == 7
    assert buffer[2] == 9
    # Default negative indices count from the end of all data, into the lookback.
    assert buffer.get(-1) == 9
    assert buffer.get(-6) == 4
    np.testing.assert_array_equal(buffer.get([0, -1, 2]), [7, 9, 9])
    np.testing.assert_array_equal(buffer.get([-3, 1], neg_index_as_lookback=True), [4, 8])
    np.testing.assert_array_equal(buffer.get(np.array([1, 0])), [8, 7])
    np.testing.assert_array_equal(buffer.get(slice(1, None)), [8, 9])
    np.testing.assert_array_equal(buffer.get(slice(None, -1)), [7, 8])
    np.testing.assert_array_equal(buffer[-2:], [8, 9])
    np.testing.assert_array_equal(buffer.get(slice(0, 3, 2)), [7, 9])
    np.testing.assert_array_equal(
        buffer.get(slice(-3, 3, 2), neg_index_as_lookback=True), [4, 6, 8])
    # Without fill, slices are clipped to the stored data.
    np.testing.assert_array_equal(buffer.get(slice(-10, None)), [4, 5, 6, 7, 8, 9])
    np.testing.assert_array_equal(buffer.get(slice(1, 10)), [8, 9])
    # Positions -4, 0, 4, 8, 12: the phase of the step is kept while clipping.
    np.testing.assert_array_equal(buffer.get(slice(-10, 10, 4)), [4, 8])
    assert len(buffer.get(slice(2, 1))) == 0


@pytest.mark.parametrize("finalized", [False, True])
def test_fill_left_right_and_lists(finalized):
    buffer = _maybe_finalize(InfiniteLookbackBuffer([1, 2, 3]), finalized)
    np.testing.assert_array_equal(buffer.get(slice(-5, -2), fill=-9), [-9, -9, 1])
    np.testing.assert_array_equal(buffer.get(slice(1, 5), fill=-7), [2, 3, -7, -7])
    np.testing.assert_array_equal(buffer.get([5, 0, -4], fill=0), [0, 1, 0])
    assert buffer.get(3, fill=-1) == -1
    assert buffer.get(-1, neg_index_as_lookback=True, fill=-2) == -2
    # In-range requests are unaffected by fill.
    np.testing.assert_array_equal(buffer.get(slice(0, 2), fill=-1), [1, 2])


def test_batch_types_before_and_after_finalize():
    buffer = InfiniteLookbackBuffer([1, 2, 3])
    assert buffer.get([1]) == [2]
    assert buffer.get(slice(None, 2)) == [1, 2]
    assert buffer.finalized is False
    buffer.finalize()
    assert buffer.finalized is True
    assert isinstance(buffer.get([1]), np.ndarray)
    assert isinstance(buffer.get(slice(0, 2)), np.ndarray)
    np.testing.assert_array_equal(buffer.data, [1, 2, 3])


@pytest.mark.parametrize("index", [3, -4, [0, 3]])
def test_out_of_range_int_raises_index_error(index):
    buffer = InfiniteLookbackBuffer([1, 2, 3])
    with pytest.raises(IndexError, match="Index out of range. Received: index="):
        buffer.get(index)


def test_neg_index_into_missing_lookback_raises_index_error():
    buffer = InfiniteLookbackBuffer([1, 2, 3], lookback=1)
    assert buffer.get(-1, neg_index_as_lookback=True) == 1
    with pytest.raises(IndexError, match="neg_index_as_lookback"):
        buffer.get(-2, neg_index_as_lookback=True)


@pytest.mark.parametrize("index", ["a", 1.5, True, {1: 2}])
def test_bad_index_type_raises_type_error(index):
    with pytest.raises(TypeError, match="Received: indices="):
        InfiniteLookbackBuffer([1, 2]).get(index)


def test_index_list_with_non_int_raises_type_error():
    with pytest.raises(TypeError, match="Index lists must hold ints"):
        InfiniteLookbackBuffer([1, 2]).get([0, 1.0])


@pytest.mark.parametrize("step", [0, 1.5])
def test_bad_slice_step_raises_value_error(step):
    with pytest.raises(ValueError, match="non-zero int step"):
        InfiniteLookbackBuffer([1, 2]).get(slice(None, None, step))


def test_negative_slice_step_as_in_rllib():
    # RLlib's behaviour (issue 28): negative steps walk backwards (step -1 was refused before).
    buffer = InfiniteLookbackBuffer([0, 1, 2, 3, 4], lookback=1)
    assert buffer.get(slice(3, 0, -1)) == [4, 3, 2]
    assert buffer.get(slice(None, None, -1)) == [4, 3, 2, 1]


# ---- one_hot_discrete and fill with spaces -------------------------------------------


@pytest.mark.parametrize("finalized", [False, True])
def test_one_hot_discrete(finalized):
    buffer = InfiniteLookbackBuffer([0, 1, 2, 3], space=gym.spaces.Discrete(4))
    _maybe_finalize(buffer, finalized)
    np.testing.assert_array_equal(buffer.get(2, one_hot_discrete=True), [0, 0, 1, 0])
    np.testing.assert_array_equal(
        buffer.get(slice(0, 3), one_hot_discrete=True), [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    )
    # Filled positions become "zero-hot" for fill=0.
    np.testing.assert_array_equal(
        buffer.get(-1, neg_index_as_lookback=True, fill=0.0, one_hot_discrete=True), [0, 0, 0, 0]
    )
    out = buffer.get(slice(2, 6), fill=0, one_hot_discrete=True)
    if not finalized:  # a list of one-hot items before finalize(), as in RLlib
        assert isinstance(out, list) and all(x.dtype == np.float32 for x in out)
        out = batch(out)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]])
    empty = buffer.get(slice(3, 3), one_hot_discrete=True)
    assert empty == [] if not finalized else empty.shape == (0, 4)


@pytest.mark.parametrize("finalized", [False, True])
def test_one_hot_and_fill_for_dict_space(finalized):
    buffer = InfiniteLookbackBuffer(
        [_dict_item(0, 1, 2, 0.5), _dict_item(2, 0, 1, 0.25)], space=DICT_SPACE
    )
    _maybe_finalize(buffer, finalized)
    out = buffer.get(slice(-1, 2), neg_index_as_lookback=True, fill=0.0, one_hot_discrete=True)
    if not finalized:  # a list of one-hot items before finalize(), as in RLlib
        out = batch(out)
    np.testing.assert_array_equal(out["a"], [[0, 0, 0], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(out["b"], [[0, 0, 0, 0, 0], [0, 1, 0, 0, 1], [1, 0, 0, 1, 0]])
    np.testing.assert_allclose(out["c"], [[0, 0], [0.5, -0.5], [0.25, -0.25]])
    # Plain fill: every leaf of the filled item gets the fill value.
    filled = buffer.get(-1, neg_index_as_lookback=True, fill=-1)
    assert filled["a"] == -1
    np.testing.assert_array_equal(filled["b"], [-1, -1])
    np.testing.assert_array_equal(filled["c"], np.array([-1, -1], np.float32))
    assert filled["c"].dtype == np.float32


def test_one_hot_without_space_raises_value_error():
    with pytest.raises(ValueError, match="Received: space=None"):
        InfiniteLookbackBuffer([0, 1]).get(0, one_hot_discrete=True)


@pytest.mark.parametrize("finalized", [False, True])
def test_fill_shape_inferred_from_numpy_data_without_space(finalized):
    items = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
    buffer = _maybe_finalize(InfiniteLookbackBuffer(items), finalized)
    out = buffer.get(slice(-1, 1), neg_index_as_lookback=True, fill=0.0)
    np.testing.assert_array_equal(out[0], np.zeros(2, np.float32))
    np.testing.assert_array_equal(out[1], [1.0, 2.0])
    assert np.asarray(out[0]).dtype == np.float32


def test_fill_on_empty_finalized_buffer_uses_space():
    buffer = InfiniteLookbackBuffer([], space=gym.spaces.Box(-1, 1, (3,), np.float32))
    buffer.finalize()
    assert buffer.data.shape == (0, 3)
    np.testing.assert_array_equal(buffer.get(slice(0, 2), fill=7.0), np.full((2, 3), 7.0))
    np.testing.assert_array_equal(buffer.get(0, fill=1.0), [1.0, 1.0, 1.0])


# ---- set -------------------------------------------------------------------------------


@pytest.mark.parametrize("finalized", [False, True])
def test_set_int_list_slice_and_all(finalized):
    buffer = _maybe_finalize(InfiniteLookbackBuffer([4, 5, 6, 7, 8, 9], lookback=3), finalized)
    buffer.set(60, at_indices=-1, neg_index_as_lookback=True)
    buffer.set([70, 90], at_indices=[0, -1])
    buffer.set([50], at_indices=slice(-2, -1), neg_index_as_lookback=True)
    np.testing.assert_array_equal(buffer.get(slice(-3, None), neg_index_as_lookback=True),
                                  [4, 50, 60, 70, 8, 90])
    buffer.set([1, 2, 3])
    np.testing.assert_array_equal(buffer.get(), [1, 2, 3])
    if finalized:
        buffer.set(np.array([7, 8, 9]), at_indices=slice(0, 3))
        np.testing.assert_array_equal(buffer.get(), [7, 8, 9])


@pytest.mark.parametrize("finalized", [False, True])
def test_set_size_mismatch_raises_index_error(finalized):
    buffer = _maybe_finalize(InfiniteLookbackBuffer([1, 2, 3]), finalized)
    with pytest.raises(IndexError, match="Received: 2 items for at_indices=slice"):
        buffer.set([1, 2], at_indices=slice(0, 3))
    with pytest.raises(IndexError, match="Received: 1 items"):
        buffer.set([1], at_indices=[0, 1])
    with pytest.raises(IndexError, match="Index out of range"):
        buffer.set(5, at_indices=3)


def test_set_nested_finalized_and_structure_mismatch():
    buffer = InfiniteLookbackBuffer([_dict_item(0, 1, 2, 0.5), _dict_item(2, 0, 1, 0.25)],
                                    space=DICT_SPACE)
    buffer.finalize()
    buffer.set(_dict_item(1, 1, 1, 1.0), at_indices=0)
    np.testing.assert_array_equal(buffer.data["a"], [1, 2])
    np.testing.assert_array_equal(buffer.data["b"], [[1, 1], [0, 1]])
    buffer.set([_dict_item(0, 0, 0, 0.0)], at_indices=[1])
    np.testing.assert_array_equal(buffer.data["c"], [[1.0, -1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="structure of the stored items"):
        buffer.set({"a": 1}, at_indices=0)
    with pytest.raises(ValueError, match="structure of the stored items"):
        buffer.set({"x": 1, "y": np.zeros(2), "z": np.zeros(2)}, at_indices=0)
    # A lossy cast in one leaf leaves every leaf untouched.
    with pytest.raises(TypeError, match="lose information"):
        buffer.set({"a": 0, "b": np.array([0, 0]), "c": np.array([1, 1], np.complex64)},
                   at_indices=0)
    np.testing.assert_array_equal(buffer.data["a"], [1, 0])


def test_set_finalized_refuses_lossy_casts():
    buffer = InfiniteLookbackBuffer([1, 2, 3])
    buffer.finalize()
    with pytest.raises(TypeError, match="Received: dtype float64 for stored dtype int64"):
        buffer.set(0.5, at_indices=0)
    with pytest.raises(TypeError, match="lose information"):
        buffer.set([0.5, 1.5], at_indices=slice(0, 2))
    np.testing.assert_array_equal(buffer.data, [1, 2, 3])
    floats = InfiniteLookbackBuffer([1.0, 2.0], space=gym.spaces.Box(0, 9, (), np.float32))
    floats.finalize()
    floats.set([7, 8])  # int -> float32 is a safe kind.
    np.testing.assert_array_equal(floats.data, [7.0, 8.0])


# ---- growth, construction, state -------------------------------------------------------


def test_append_extend_before_and_after_finalize():
    buffer = InfiniteLookbackBuffer([1.0], lookback=1)
    buffer.append(2.0)
    buffer.extend([3.0, 4.0])
    assert buffer.data == [1.0, 2.0, 3.0, 4.0]
    buffer.finalize()
    buffer.append(5.0)
    buffer.extend([6.0])
    buffer.extend([])
    np.testing.assert_array_equal(buffer.data, [1, 2, 3, 4, 5, 6])
    assert len(buffer) == 5


def test_finalize_nested_and_dtype_from_space():
    buffer = InfiniteLookbackBuffer([0.0, 1.0], space=gym.spaces.Box(0, 1, (), np.float32))
    buffer.finalize()
    assert buffer.data.dtype == np.float32
    buffer = InfiniteLookbackBuffer([_dict_item(0, 1, 2, 0.5), _dict_item(2, 0, 1, 0.25)])
    buffer.finalize()
    np.testing.assert_array_equal(buffer.data["a"], [0, 2])
    assert buffer.data["b"].shape == (2, 2)
    assert buffer.len_incl_lookback() == 2
    single = buffer.get(1)
    assert single["a"] == 2
    np.testing.assert_array_equal(single["b"], [0, 1])


def test_constructor_errors():
    with pytest.raises(TypeError, match="Received: lookback='1'"):
        InfiniteLookbackBuffer([1, 2], lookback="1")
    with pytest.raises(ValueError, match="Received: lookback=-1"):
        InfiniteLookbackBuffer([1, 2], lookback=-1)
    with pytest.raises(ValueError, match="Received: lookback=3"):
        InfiniteLookbackBuffer([1, 2], lookback=3)


def test_numpy_data_counts_as_finalized():
    buffer = InfiniteLookbackBuffer(np.array([1, 2, 3]), lookback=1)
    assert buffer.finalized
    np.testing.assert_array_equal(buffer.get(), [2, 3])


@pytest.mark.parametrize("finalized", [False, True])
def test_state_round_trip_through_pickle(finalized):
    buffer = InfiniteLookbackBuffer([1, 2, 3], lookback=1, space=gym.spaces.Discrete(4))
    _maybe_finalize(buffer, finalized)
    restored = InfiniteLookbackBuffer.from_state(pickle.loads(pickle.dumps(buffer.get_state())))
    assert restored.lookback == 1
    assert restored.finalized == finalized
    assert restored.space == gym.spaces.Discrete(4)
    np.testing.assert_array_equal(restored.get(), [2, 3])
    if not finalized:
        restored.append(4)  # The restored list is not shared with the original.
        assert len(buffer) == 2


def test_repr_names_lookback():
    assert "lookback=1, len=1" in repr(InfiniteLookbackBuffer([1, 2], lookback=1))


# ---- tfrl.utils.spaces -------------------------------------------------------------------


def test_batch_and_unbatch_round_trip():
    items = [{"a": 1, "b": (np.array([1.0]), 2)}, {"a": 3, "b": (np.array([4.0]), 5)}]
    batched = batch(items)
    np.testing.assert_array_equal(batched["a"], [1, 3])
    np.testing.assert_array_equal(batched["b"][0], [[1.0], [4.0]])
    rows = unbatch(batched)
    assert len(rows) == 2
    assert structs_equal(rows[1], items[1])
    np.testing.assert_array_equal(batch([1, 2]), [1, 2])
    np.testing.assert_array_equal(unbatch(np.array([1, 2])), [1, 2])
    assert unbatch({}) == []
    joined = batch([np.array([1, 2]), np.array([3])], individual_items_already_have_batch_dim=True)
    np.testing.assert_array_equal(joined, [1, 2, 3])


def test_batch_errors():
    with pytest.raises(ValueError, match="Received: list_of_structs=\\[\\]"):
        batch([])
    with pytest.raises(ValueError, match="item 1 differs from item 0"):
        batch([{"a": 1}, {"b": 1}])
    with pytest.raises(ValueError, match="Received: batch sizes \\[1, 2\\]"):
        unbatch({"a": np.zeros(2), "b": np.zeros(1)})
    with pytest.raises(ValueError, match="scalar leaves"):
        unbatch({"a": 1})


def test_one_hot_spaces_with_start_and_tuple():
    np.testing.assert_array_equal(one_hot(3, gym.spaces.Discrete(3, start=1)), [0, 0, 1])
    md = gym.spaces.MultiDiscrete([2, 3], start=[1, 0])
    np.testing.assert_array_equal(one_hot(np.array([[2, 0], [1, 2]]), md),
                                  [[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])
    space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,))))
    out = one_hot((1, np.array([0.5])), space)
    np.testing.assert_array_equal(out[0], [0, 1])
    np.testing.assert_array_equal(out[1], [0.5])
    with pytest.raises(ValueError, match="Received: values=\\[3\\]"):
        one_hot(np.array([3]), gym.spaces.Discrete(3))


def test_fill_value_for_space():
    assert fill_value_for_space(gym.spaces.Discrete(3), 2) == 2
    np.testing.assert_array_equal(
        fill_value_for_space(gym.spaces.Discrete(3), 0, one_hot_discrete=True), [0, 0, 0])
    np.testing.assert_array_equal(
        fill_value_for_space(gym.spaces.MultiDiscrete([2, 3]), 1, one_hot_discrete=True),
        np.ones(5))
    np.testing.assert_array_equal(fill_value_for_space(gym.spaces.MultiBinary(2), 1), [1, 1])
    value = fill_value_for_space(
        gym.spaces.Tuple((gym.spaces.Box(0, 1, (2,), np.float64), gym.spaces.Box(0, 1, ()))), 0.5)
    np.testing.assert_array_equal(value[0], [0.5, 0.5])
    assert value[0].dtype == np.float64
    assert value[1] == np.float32(0.5) and isinstance(value[1], np.float32)
    assert fill_value_for_space(gym.spaces.Text(5), "x") == "x"


def test_to_numpy_batch_and_structs_equal():
    empty = to_numpy_batch([], DICT_SPACE)
    assert empty["a"].shape == (0,) and empty["b"].shape == (0, 2) and empty["c"].shape == (0, 2)
    assert to_numpy_batch([]).shape == (0,)
    assert to_numpy_batch([1, 2], gym.spaces.Discrete(3)).dtype == np.int64
    assert not structs_equal({"a": np.array([1])}, {"a": np.array([2])})
    assert not structs_equal({"a": 1}, {"b": 1})
    assert not structs_equal([1, 2], [1, 3])
    assert structs_equal({"a": [np.array([1.0]), "x"]}, {"a": [np.array([1.0]), "x"]})
    assert structs_equal((1, {"a": 2}), [1, {"a": 2}])  # list vs tuple: same structure.
    assert same_structure({"a": 1, "b": (1, 2)}, {"b": [3, 4], "a": 0})
    assert not same_structure({"a": 1}, {"a": 1, "b": 2})
    assert not same_structure(1, [1])
