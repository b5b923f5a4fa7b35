"""Tensor specs of space batches and the input checks in front of compiled functions."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.policy import space_specs

DICT = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (2,)), "id": gym.spaces.Discrete(3)})


def test_batch_spec_and_zeros_for_nested_spaces():
    spec = space_specs.batch_spec(gym.spaces.Tuple([DICT, gym.spaces.MultiDiscrete([2, 3])]))
    assert spec == ({"id": tf.TensorSpec((None,), tf.int64),
                     "pos": tf.TensorSpec((None, 2), tf.float32)},
                    tf.TensorSpec((None, 2), tf.int64))
    zeros = space_specs.zeros_batch(DICT, 3)
    assert zeros["pos"].shape == (3, 2) and zeros["id"].dtype == np.int64
    assert space_specs.batch_spec(gym.spaces.MultiBinary(4)).dtype == tf.int8


def test_to_batch_casts_within_a_kind_and_checks_nesting():
    batch = space_specs.to_batch(DICT, {"pos": np.zeros((2, 2)), "id": np.array([0, 2], np.int32)},
                                 "obs_batch")
    assert batch["pos"].dtype == np.float32 and batch["id"].dtype == np.int64
    with pytest.raises(ValueError, match=r"obs_batch must be nested like Dict.*received dict with "
                                         r"keys \['pos'\]"):
        space_specs.to_batch(DICT, {"pos": np.zeros((2, 2))}, "obs_batch")
    with pytest.raises(ValueError, match=r"obs_batch\['id'\] must have shape \[B\] for items"):
        space_specs.to_batch(DICT, {"pos": np.zeros((2, 2)), "id": np.zeros((2, 1), np.int64)},
                             "obs_batch")
    with pytest.raises(TypeError, match=r"obs_batch\['id'\] has dtype float64, which does not "
                                        r"convert to Discrete\(3\)'s dtype int64"):
        space_specs.to_batch(DICT, {"pos": np.zeros((2, 2)), "id": np.zeros(2)}, "obs_batch")


def test_unsupported_space():
    with pytest.raises(TypeError, match=r"received Text\(.*Preprocess other spaces"):
        space_specs.batch_spec(gym.spaces.Text(5))


def test_action_error():
    space = gym.spaces.MultiDiscrete([2, 3])
    assert space_specs.action_error(space, np.array([[1, 2], [0, 0]])) is None
    assert space_specs.action_error(space, np.array([[1, 3], [0, 0]])) == (
        "actions must lie in [0, 2] for MultiDiscrete([2 3]); rows [0] hold [[1, 3]]")
    assert "must have shape [B, 2]" in space_specs.action_error(space, np.array([[1], [0]]))
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    assert space_specs.action_error(box, np.full((3, 2), 5.0)) is None  # unclipped samples train
    assert "must have shape [B, 2]" in space_specs.action_error(box, np.zeros((3, 3)))
    assert "actions['id'] must lie in [0, 2]" in space_specs.action_error(
        DICT, {"id": np.array([3]), "pos": np.zeros((1, 2))})
    assert "not nested like" in space_specs.action_error(DICT, np.zeros(3))
