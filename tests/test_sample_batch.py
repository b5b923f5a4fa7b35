"""SampleBatch: construction, concat, slicing, splitting, padding, compression."""

import pickle

import numpy as np
import pytest

from tfrl.core.columns import Columns
from tfrl.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch, concat_samples
from tfrl.policy.view_requirement import ViewRequirement


def _a(batch, key="a"):
    return np.asarray(batch[key]).tolist()


# ---------------------------------------------------------------- construction

def test_lists_become_arrays_and_count_is_rows():
    b = SampleBatch({"obs": [1, 2, 3], "reward": [0, -1, 1]})
    assert isinstance(b["obs"], np.ndarray)
    assert len(b) == b.count == 3
    assert b.agent_steps() == b.env_steps() == 3


def test_infos_become_object_array_of_dicts():
    b = SampleBatch({"infos": [{"x": 1}, {"y": [1, 2]}], "a": [1, 2]})
    assert b["infos"].dtype == object
    assert b["infos"].shape == (2,)
    assert b["infos"][1] == {"y": [1, 2]}


def test_nested_rows_are_stacked_and_count_uses_first_leaf():
    b = SampleBatch({"obs": [{"x": np.zeros(2), "y": 1}, {"x": np.ones(2), "y": 2}]})
    assert b["obs"]["x"].shape == (2, 2)
    np.testing.assert_array_equal(b["obs"]["y"], [1, 2])
    assert len(b) == 2  # nested-only batches count their first leaf


def test_seq_lens_list_becomes_int32_and_sets_max_seq_len():
    b = SampleBatch({"a": [1, 2, 3], "seq_lens": [1, 2]})
    assert b["seq_lens"].dtype == np.int32
    assert b.max_seq_len == 2
    assert len(b) == 3


def test_empty_or_none_seq_lens_are_removed():
    assert "seq_lens" not in SampleBatch({"a": [1], "seq_lens": None})
    assert "seq_lens" not in SampleBatch({"a": [1], "seq_lens": []})


def test_is_training_is_popped_from_data():
    b = SampleBatch({"a": [1], "is_training": True})
    assert "is_training" not in b.keys()
    assert b.is_training is True
    assert SampleBatch({"a": [1]}).is_training is False
    assert SampleBatch({"a": [1]}, _is_training=True).is_training is True


def test_non_string_key_is_rejected():
    with pytest.raises(TypeError, match="column names must be strings"):
        SampleBatch({1: [1, 2]})


def test_columns_of_unequal_length_are_rejected_with_their_lengths():
    with pytest.raises(ValueError, match=r"same number of rows.*'a': 3.*'b': 2"):
        SampleBatch({"a": [1, 2, 3], "b": [1, 2]})


def test_seq_batch_rows_must_match_seq_lens():
    with pytest.raises(ValueError, match="seq_lens sums to 3"):
        SampleBatch({"a": [1, 2, 3, 4], "seq_lens": [1, 2]})
    with pytest.raises(ValueError, match="one row per sequence"):
        SampleBatch({"a": [1, 2, 3], "state_in_0": [1.0], "seq_lens": [1, 2]})


def test_ragged_list_column_names_the_column():
    with pytest.raises(ValueError, match="Column 'obs'"):
        SampleBatch({"obs": [[1, 2], [3]]})


def test_column_constants_match_rllib_strings():
    assert SampleBatch.OBS == "obs"
    assert SampleBatch.NEXT_OBS == "new_obs"
    assert SampleBatch.DONES == "dones"
    assert SampleBatch.TERMINATEDS == Columns.TERMINATEDS == "terminateds"
    assert SampleBatch.ACTION_LOGP == "action_logp"
    assert DEFAULT_POLICY_ID == "default_policy"


def test_access_tracking_and_interceptor():
    b = SampleBatch({"a": np.array([1, 2])})
    b["b"] = [3, 4]
    assert b.added_keys == {"b"}
    assert isinstance(b["b"], np.ndarray)
    del b["b"]
    assert b.deleted_keys == {"b"}
    b.set_get_interceptor(lambda v: v * 10)
    np.testing.assert_array_equal(b["a"], [10, 20])
    assert "a" in b.accessed_keys
    assert b.get("missing", "default") == "default"


def test_pickle_round_trip():
    b = SampleBatch({"a": [1, 2, 3], "seq_lens": [1, 2]}, _is_training=True)
    c = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(c["a"], [1, 2, 3])
    assert c.count == 3 and c.max_seq_len == 2 and c.is_training


# ------------------------------------------------------------------- concat

def test_concat_docstring_example():
    b1 = SampleBatch({"a": np.array([1, 2])})
    b2 = SampleBatch({"a": np.array([3, 4, 5])})
    c = b1.concat(b2)
    assert _a(c) == [1, 2, 3, 4, 5]
    assert len(c) == 5
    assert _a(b1) == [1, 2]  # inputs untouched


def test_concat_samples_nested_infos_and_seq_lens():
    b1 = SampleBatch({"a": {"x": [1, 2]}, "infos": [{"i": 0}, {"i": 1}]})
    b2 = SampleBatch({"a": {"x": [3]}, "infos": [{"i": 2}]})
    c = SampleBatch.concat_samples([b1, b2])
    assert c["a"]["x"].tolist() == [1, 2, 3]
    assert [d["i"] for d in c["infos"]] == [0, 1, 2]
    s1 = SampleBatch({"a": [1, 2, 3], "seq_lens": [1, 2]})
    s2 = SampleBatch({"a": [4, 5], "seq_lens": [2]})
    s = concat_samples([s1, s2])
    assert s["seq_lens"].tolist() == [1, 2, 2]
    assert len(s) == 5 and s.max_seq_len == 2


def test_concat_samples_skips_empty_batches_and_returns_empty_batch():
    b = SampleBatch({"a": [1, 2]})
    c = concat_samples([SampleBatch(), b, SampleBatch({"zzz": np.zeros(0)})])
    assert _a(c) == [1, 2]
    empty = concat_samples([SampleBatch(), SampleBatch()])
    assert isinstance(empty, SampleBatch) and len(empty) == 0


def test_concat_with_different_keys_names_the_difference():
    with pytest.raises(ValueError, match=r"same columns.*missing \['b'\].*extra \['c'\]"):
        concat_samples([SampleBatch({"a": [1], "b": [2]}), SampleBatch({"a": [1], "c": [2]})])


def test_concat_with_mismatched_substructure():
    with pytest.raises(ValueError, match="Cannot concat data under key 'a'"):
        concat_samples([SampleBatch({"a": {"x": [1]}}), SampleBatch({"a": {"y": [1]}})])


def test_concat_with_mismatched_flags():
    b1 = SampleBatch({"a": [1, 2], "seq_lens": [2]}).right_zero_pad(2)
    b2 = SampleBatch({"a": [1, 2], "seq_lens": [2]})
    with pytest.raises(ValueError, match="zero_padded"):
        concat_samples([b1, b2])
    b3 = SampleBatch({"a": [1, 2, 0], "seq_lens": [2]}, _zero_padded=True, _max_seq_len=3)
    with pytest.raises(ValueError, match="max_seq_len"):
        concat_samples([b1, b3])


def test_concat_of_non_batch_is_a_type_error():
    with pytest.raises(TypeError, match="position 1"):
        concat_samples([SampleBatch({"a": [1]}), 3])


def test_concat_samples_with_multi_agent_batch_gives_multi_agent_batch():
    b = SampleBatch({"a": [1, 2]})
    out = concat_samples([b.as_multi_agent(), b.as_multi_agent()])
    assert isinstance(out, MultiAgentBatch)
    assert out.env_steps() == 4
    assert _a(out.policy_batches[DEFAULT_POLICY_ID]) == [1, 2, 1, 2]


# ------------------------------------------------------------ copy / access

def test_copy_deep_and_shallow():
    b = SampleBatch({"a": np.array([1, 2]), "infos": [{"k": 1}, {"k": 2}]}, _is_training=True)
    deep = b.copy()
    deep["a"][0] = 100
    deep["infos"][0]["k"] = 100
    assert _a(b) == [1, 2] and b["infos"][0]["k"] == 1
    assert deep.is_training
    shallow = b.copy(shallow=True)
    shallow["a"][0] = 7
    assert b["a"][0] == 7


def test_columns_in_order_and_missing_key():
    b = SampleBatch({"a": [1], "b": [2], "c": [3]})
    assert [c.tolist() for c in b.columns(["a", "b"])] == [[1], [2]]
    with pytest.raises(KeyError, match=r"no column\(s\) \['d'\]"):
        b.columns(["a", "d"])


def test_rows_with_seq_lens():
    b = SampleBatch({"a": [1, 2, 3], "b": [4, 5, 6], "seq_lens": [1, 2]})
    rows = list(b.rows())
    assert [(r["a"], r["b"]) for r in rows] == [(1, 4), (2, 5), (3, 6)]
    for r in rows:
        np.testing.assert_array_equal(r["seq_lens"], np.array([1], np.int32))  # one sequence of length 1


def test_size_bytes_sums_array_bytes():
    b = SampleBatch({"a": np.zeros(10, np.float32), "b": {"c": np.zeros((10, 2), np.int64)}})
    assert b.size_bytes() == 40 + 160


# ------------------------------------------------------------------ shuffle

def test_shuffle_is_seeded_and_keeps_rows_aligned():
    b = SampleBatch({"a": np.arange(8), "b": np.arange(8) * 10, "n": {"x": np.arange(8)}})
    np.random.seed(0)
    out = b.shuffle()
    assert out is b
    expected = np.random.RandomState(0).permutation(8)
    np.testing.assert_array_equal(b["a"], expected)
    np.testing.assert_array_equal(b["b"], expected * 10)
    np.testing.assert_array_equal(b["n"]["x"], expected)
    c = SampleBatch({"a": np.arange(8)}).shuffle(seed=3)
    d = SampleBatch({"a": np.arange(8)}).shuffle(seed=3)
    np.testing.assert_array_equal(c["a"], d["a"])
    assert sorted(c["a"].tolist()) == list(range(8))


def test_shuffle_with_seq_lens_is_refused():
    with pytest.raises(ValueError, match="shuffle not possible when your data has `seq_lens`"):
        SampleBatch({"a": [1, 2], "seq_lens": [2]}).shuffle()


# ------------------------------------------------------------------ slicing

def test_python_slicing_returns_views():
    b = SampleBatch({"a": np.arange(5), "n": {"x": np.arange(5) * 2}})
    s = b[1:3]
    assert _a(s) == [1, 2] and s["n"]["x"].tolist() == [2, 4] and len(s) == 2
    s["a"][0] = 99
    assert b["a"][1] == 99
    assert _a(b[-2:]) == [3, 4]
    assert len(b[4:2]) == 0


def test_slice_with_negative_start_left_zero_pads():
    b = SampleBatch({"a": np.arange(1, 5), "f": np.ones((4, 2), np.float32)})
    s = b.slice(-2, 2)
    assert _a(s) == [0, 0, 1, 2]
    assert s["f"].dtype == np.float32 and s["f"].tolist() == [[0, 0], [0, 0], [1, 1], [1, 1]]


def test_slice_of_sequence_batch_with_state_range():
    b = SampleBatch({"a": [1, 2, 3, 4, 5, 6], "state_in_0": [10.0, 20.0, 30.0], "seq_lens": [1, 2, 3]})
    s = b.slice(1, 3, state_start=1, state_end=2)
    assert _a(s) == [2, 3] and s["state_in_0"].tolist() == [20.0] and s["seq_lens"].tolist() == [2]
    assert _a(b[1:6]) == [2, 3, 4, 5, 6]
    assert b[1:6]["seq_lens"].tolist() == [2, 3]


def test_slicing_a_sequence_batch_inside_a_sequence_cuts_at_the_sequence_start():
    # RLlib's behaviour (issue 28): a bound inside a sequence moves back to its start.
    b = SampleBatch({"a": [1, 2, 3], "state_in_0": [10.0, 20.0], "seq_lens": [1, 2]})
    s = b[0:2]
    assert _a(s) == [1] and s["seq_lens"].tolist() == [1] and s["state_in_0"].tolist() == [10.0]
    s = b[2:3]
    assert _a(s) == [2, 3] and s["seq_lens"].tolist() == [2] and s["state_in_0"].tolist() == [20.0]
    padded = SampleBatch({"a": [1, 0, 2, 3], "mask": [1, 1, 1], "seq_lens": [1, 2]},
                         _zero_padded=True, _max_seq_len=2)
    s = padded[1:3]  # timesteps (not padded rows): the second sequence
    assert _a(s) == [2, 3] and s["mask"].tolist() == [1, 1] and s["seq_lens"].tolist() == [2]


def test_slicing_with_step_is_refused():
    with pytest.raises(ValueError, match="step=2"):
        SampleBatch({"a": [1, 2, 3]})[::2]


# --------------------------------------------------------------- timeslices

@pytest.mark.parametrize(
    "count,num_slices,sizes",
    [(10, 3, [3, 3, 4]), (10, 4, [2, 2, 3, 3]), (2, 3, [0, 1, 1]), (6, 2, [3, 3])],
)
def test_timeslices_num_slices(count, num_slices, sizes):
    b = SampleBatch({"a": np.arange(count)})
    slices = b.timeslices(num_slices=num_slices)
    assert [len(s) for s in slices] == sizes
    assert np.concatenate([s["a"] for s in slices]).tolist() == list(range(count))


def test_timeslices_size_with_remainder():
    b = SampleBatch({"a": np.arange(10)})
    assert [s["a"].tolist() for s in b.timeslices(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [len(s) for s in b.timeslices(size=5)] == [5, 5]
    assert SampleBatch().timeslices(3) == []


def test_timeslices_k_is_deprecated_alias():
    b = SampleBatch({"a": np.arange(4)})
    with pytest.warns(DeprecationWarning, match="deprecated"):
        slices = b.timeslices(k=2)
    assert [len(s) for s in slices] == [2, 2]


@pytest.mark.parametrize(
    "kwargs,match",
    [({}, "exactly one"), ({"size": 2, "num_slices": 2}, "exactly one"),
     ({"size": 0}, "positive int"), ({"size": 1.5}, "positive int"),
     ({"num_slices": True}, "positive int")],
)
def test_timeslices_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SampleBatch({"a": np.arange(4)}).timeslices(**kwargs)


# ---------------------------------------------------------- split_by_episode

def test_split_by_eps_id():
    b = SampleBatch({"a": [1, 2, 3], "eps_id": [0, 0, 1]})
    parts = b.split_by_episode()
    assert [(_a(p), p["eps_id"].tolist()) for p in parts] == [([1, 2], [0, 0]), ([3], [1])]


def test_split_by_eps_id_starts_new_slice_for_returning_id():
    b = SampleBatch({"a": [1, 2, 3, 4], "eps_id": [7, 8, 8, 7]})
    assert [_a(p) for p in b.split_by_episode()] == [[1], [2, 3], [4]]


@pytest.mark.parametrize(
    "dones,expected",
    [([0, 0, 1, 0, 1], [[1, 2, 3], [4, 5]]),
     ([0, 0, 1, 0, 0], [[1, 2, 3], [4, 5]]),
     ([0, 0, 0, 0, 0], [[1, 2, 3, 4, 5]])],
)
def test_split_by_legacy_dones(dones, expected):
    b = SampleBatch({"a": [1, 2, 3, 4, 5], "dones": dones})
    assert [_a(p) for p in b.split_by_episode()] == expected


def test_split_by_terminateds_and_truncateds():
    b = SampleBatch({
        "a": [1, 2, 3, 4, 5, 6],
        "terminateds": [0, 1, 0, 0, 0, 0],
        "truncateds": [0, 0, 0, 1, 0, 0],
    })
    assert [_a(p) for p in b.split_by_episode()] == [[1, 2], [3, 4], [5, 6]]
    assert [_a(p) for p in b.split_by_episode(key="terminateds")] == [[1, 2], [3, 4, 5, 6]]


def test_split_by_key_overrides_eps_id():
    b = SampleBatch({"a": [1, 2, 3], "eps_id": [0, 0, 0], "dones": [1, 0, 0]})
    assert [_a(p) for p in b.split_by_episode()] == [[1, 2, 3]]
    assert [_a(p) for p in b.split_by_episode(key="dones")] == [[1], [2, 3]]


def test_split_by_episode_errors():
    with pytest.raises(KeyError, match="eps_id"):
        SampleBatch({"a": [1, 2]}).split_by_episode()
    with pytest.raises(KeyError, match="'eps_id' column"):
        SampleBatch({"a": [1], "dones": [0]}).split_by_episode(key="eps_id")
    with pytest.raises(ValueError, match="must be one of"):
        SampleBatch({"a": [1], "dones": [0]}).split_by_episode(key="a")


def test_is_terminated_or_truncated_and_single_trajectory():
    b = SampleBatch({"a": [1, 2, 3], "terminateds": [0, 0, 0], "truncateds": [0, 0, 1]})
    assert b.is_terminated_or_truncated() and b.is_single_trajectory()
    c = SampleBatch({"a": [1, 2, 3], "terminateds": [0, 1, 0], "truncateds": [0, 0, 0]})
    assert not c.is_terminated_or_truncated() and not c.is_single_trajectory()
    d = SampleBatch({"a": [1, 2], "dones": [1, 0]})
    assert not d.is_single_trajectory()
    assert SampleBatch({"a": [1]}).is_single_trajectory()


# ----------------------------------------------------------- right_zero_pad

def test_right_zero_pad_docstring_examples():
    b = SampleBatch({"a": [1, 2, 3], "seq_lens": [1, 2]})
    out = b.right_zero_pad(max_seq_len=4)
    assert out is b
    assert _a(b) == [1, 0, 0, 0, 2, 3, 0, 0]
    assert b["seq_lens"].tolist() == [1, 2]
    assert b.zero_padded and b.max_seq_len == 4
    assert len(b) == 3  # count stays the number of real timesteps
    b = SampleBatch({"a": [1, 2, 3], "state_in_0": [1.0, 3.0], "seq_lens": [1, 2]})
    b.right_zero_pad(max_seq_len=5)
    assert _a(b) == [1, 0, 0, 0, 0, 2, 3, 0, 0, 0]
    assert b["state_in_0"].tolist() == [1.0, 3.0]


def test_right_zero_pad_keeps_dtype_pads_states_when_asked_and_objects_with_none():
    b = SampleBatch({
        "f": np.array([1.5, 2.5, 3.5], np.float32),
        "o": ["x", "y", "z"],
        "state_in_0": np.array([[1, 1], [2, 2], [3, 3]]),
        "seq_lens": [1, 1, 1],
    })
    b.right_zero_pad(2, exclude_states=False)
    assert b["f"].dtype == np.float32 and b["f"].tolist() == [1.5, 0, 2.5, 0, 3.5, 0]
    assert b["o"].tolist() == ["x", None, "y", None, "z", None]
    assert b["state_in_0"].tolist() == [[1, 1], [0, 0], [2, 2], [0, 0], [3, 3], [0, 0]]


def test_right_zero_pad_errors():
    with pytest.raises(ValueError, match="no `seq_lens` field present"):
        SampleBatch({"a": [1, 2]}).right_zero_pad(4)
    with pytest.raises(ValueError, match="shorter than the longest sequence"):
        SampleBatch({"a": [1, 2, 3], "seq_lens": [3]}).right_zero_pad(2)
    b = SampleBatch({"a": [1, 2], "seq_lens": [2]}).right_zero_pad(2)
    assert b.right_zero_pad(2) is b
    with pytest.raises(ValueError, match="already zero-padded to 2"):
        b.right_zero_pad(3)


# -------------------------------------------------------------- compression

@pytest.mark.parametrize("bulk", [False, True])
def test_compress_decompress_round_trip(bulk):
    obs = np.random.RandomState(0).randint(0, 255, size=(6, 8, 8, 3)).astype(np.uint8)
    b = SampleBatch({"obs": obs.copy(), "new_obs": obs.copy() + 1, "a": np.arange(6)})
    assert b.compress(bulk=bulk) is b
    assert isinstance(b["obs"], bytes) if bulk else b["obs"].dtype == object
    np.testing.assert_array_equal(b["a"], np.arange(6))
    b.decompress_if_needed()
    np.testing.assert_array_equal(b["obs"], obs)
    np.testing.assert_array_equal(b["new_obs"], obs + 1)
    assert b["obs"].dtype == np.uint8
    b.decompress_if_needed()  # idempotent
    np.testing.assert_array_equal(b["obs"], obs)


def test_compress_shrinks_redundant_data_and_ignores_missing_columns():
    b = SampleBatch({"obs": np.zeros((100, 84, 84), np.uint8)})
    before = b.size_bytes()
    b.compress(bulk=True, columns={"obs", "missing"})
    assert b.size_bytes() < before / 50


def test_row_compressed_batch_can_still_be_sliced_and_concatenated():
    obs = np.arange(12, dtype=np.float32).reshape(6, 2)
    b = SampleBatch({"obs": obs.copy()}).compress()
    c = concat_samples([b[0:2], b[4:6]]).decompress_if_needed()
    np.testing.assert_array_equal(c["obs"], obs[[0, 1, 4, 5]])


# ----------------------------------------------------- single-step inputs

def test_get_single_step_input_dict_last_uses_next_obs():
    b = SampleBatch({
        "obs": np.array([[1.0], [2.0], [3.0]]),
        "new_obs": np.array([[2.0], [3.0], [4.0]]),
        "actions": np.array([0, 1, 2]),
        "rewards": np.array([0.5, 1.5, 2.5]),
    })
    vrs = {
        "obs": ViewRequirement(),
        "prev_actions": ViewRequirement(data_col="actions", shift=-1),
        "prev_rewards": ViewRequirement(data_col="rewards", shift=-1),
        "skipped": ViewRequirement(data_col="actions", used_for_compute_actions=False),
    }
    last = b.get_single_step_input_dict(vrs)
    assert last["obs"].tolist() == [[4.0]]
    assert last["prev_actions"].tolist() == [2]
    assert last["prev_rewards"].tolist() == [2.5]
    assert "skipped" not in last
    assert last["seq_lens"].tolist() == [1]
    first = b.get_single_step_input_dict({"obs": ViewRequirement()}, index=0)
    assert first["obs"].tolist() == [[1.0]]
    assert b.get_single_step_input_dict({"obs": ViewRequirement()}, index=-1)["obs"].tolist() == [[3.0]]


def test_get_single_step_input_dict_frame_stack_range():
    b = SampleBatch({"obs": np.array([[1.0], [2.0], [3.0]]), "new_obs": np.array([[2.0], [3.0], [4.0]])})
    out = b.get_single_step_input_dict({"obs": ViewRequirement(shift="-3:0")})
    # The last 4 observations, ending with the final new_obs.
    assert out["obs"].tolist() == [[[1.0], [2.0], [3.0], [4.0]]]
    # Frames before the trajectory start are zeros.
    out = b.get_single_step_input_dict({"obs": ViewRequirement(shift="-5:0")})
    assert out["obs"].tolist() == [[[0.0], [0.0], [1.0], [2.0], [3.0], [4.0]]]


def test_to_device_converts_numeric_columns_only():
    import tensorflow as tf

    b = SampleBatch({"a": np.arange(3), "infos": [{}, {}, {}]}).to_device("/CPU:0")
    assert tf.is_tensor(b["a"]) and b["a"].numpy().tolist() == [0, 1, 2]
    assert isinstance(b["infos"], np.ndarray)
    with pytest.raises(ValueError, match="framework='tf2'"):
        b.to_device(framework="torch")


def test_as_multi_agent():
    b = SampleBatch({"a": [1, 2, 3]})
    ma = b.as_multi_agent()
    assert isinstance(ma, MultiAgentBatch)
    assert ma.policy_batches == {DEFAULT_POLICY_ID: b} and ma.env_steps() == 3


def test_concat_with_incompatible_shapes_names_the_column():
    with pytest.raises(ValueError, match=r"Cannot concat column 'obs'.*\(2, 3\).*\(1, 2\)"):
        concat_samples([SampleBatch({"obs": np.zeros((2, 3))}), SampleBatch({"obs": np.zeros((1, 2))})])


def test_concat_with_columns_in_another_order():
    c = concat_samples([SampleBatch({"a": [1], "b": [2]}), SampleBatch({"b": [4], "a": [3]})])
    assert c["a"].tolist() == [1, 3] and c["b"].tolist() == [2, 4]


# ------------------------------------------------ setting a column checks its length

def test_setting_a_column_of_the_wrong_length_raises_at_once():
    b = SampleBatch({"obs": np.zeros((4, 2)), "actions": np.arange(4)})
    with pytest.raises(ValueError, match=r"^Cannot set SampleBatch column 'advantages' with 3 "
                                         r"rows: the batch has 4 rows \(column 'obs'\)\."):
        b["advantages"] = np.zeros(3)
    assert "advantages" not in b and len(b) == 4
    with pytest.raises(ValueError, match="column 'actions' with 5 rows: the batch has 4 rows"):
        b["actions"] = [0, 1, 0, 1, 0]  # lists are checked after conversion
    with pytest.raises(ValueError, match="column 'nested' with 2 rows: the batch has 4 rows"):
        b["nested"] = {"a": np.zeros(2), "b": np.zeros(2)}
    assert b["actions"].tolist() == [0, 1, 2, 3]
    b["advantages"] = np.ones(4)  # right length: set
    b["obs"] = np.ones((4, 3))  # replacing a column with one of the same length
    b["infos"] = np.array([{}] * 4, dtype=object)
    with pytest.raises(ValueError, match="column 'infos' with 1 rows: the batch has 4 rows"):
        b["infos"] = np.array([{}], dtype=object)
    b["scalar"] = np.float32(1.0)  # no row axis: not a column of rows, not checked
    assert b["advantages"].tolist() == [1.0] * 4 and len(b) == 4


def test_building_up_an_empty_batch_takes_the_first_columns_length():
    b = SampleBatch()
    b["obs"] = np.zeros((3, 2))
    assert len(b) == 3
    b["actions"] = np.arange(3)
    with pytest.raises(ValueError, match="'rewards' with 2 rows: the batch has 3 rows"):
        b["rewards"] = np.zeros(2)
    empty = SampleBatch({"obs": np.zeros((0, 2))})
    empty["actions"] = np.zeros(0)  # zero rows like the rest
    with pytest.raises(ValueError, match="'rewards' with 2 rows: the batch has 0 rows"):
        empty["rewards"] = np.zeros(2)


def test_sequence_batches_check_per_sequence_and_per_timestep_columns():
    b = SampleBatch({"obs": np.arange(5), "seq_lens": [2, 3],
                     "state_in_0": np.zeros((2, 4))})
    b["state_in_0"] = np.ones((2, 4))  # one row per sequence
    b["state_out_0"] = np.ones((2, 4))
    b["advantages"] = np.zeros(5)  # one row per timestep
    with pytest.raises(ValueError, match=r"column 'state_in_0' must hold one row per sequence "
                                         r"\(2 sequences in seq_lens\); received 5 rows"):
        b["state_in_0"] = np.zeros((5, 4))
    with pytest.raises(ValueError, match=r"column 'advantages' with 2 rows: the batch's "
                                         r"seq_lens sum to 5 timesteps"):
        b["advantages"] = np.zeros(2)
    padded = SampleBatch({"obs": np.arange(6), "seq_lens": [2, 3]}, _zero_padded=True,
                         _max_seq_len=3)
    padded["advantages"] = np.zeros(6)  # zero-padded: len(seq_lens) * max_seq_len
    padded["mask"] = np.zeros(5)  # or one row per real timestep
    with pytest.raises(ValueError, match=r"sum to 5 \(zero-padded: 6\) timesteps"):
        padded["advantages"] = np.zeros(4)
