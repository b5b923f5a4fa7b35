"""RLlib's own space-serialization tests, ported to tfrl.

Ported from `rllib/utils/tests/test_serialization.py` at ray-project/ray commit
d96115ea86a078c9d541e40fcdc0af0b2c2d0cd5. Covers: test_box_space, test_discrete_space,
test_multi_discrete_space, test_tuple_space, test_dict_space, test_simplex_space,
test_repeated, test_flex_dict, test_text, test_original_space.
"""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.utils.serialization import (
    gym_space_from_dict,
    gym_space_to_dict,
    space_from_dict,
    space_to_dict,
)
from tfrl.utils.spaces.flexdict import FlexDict
from tfrl.utils.spaces.repeated import Repeated
from tfrl.utils.spaces.simplex import Simplex

RLLIB_PATH = "rllib/utils/tests/test_serialization.py"
RLLIB_COMMIT = "d96115ea86a078c9d541e40fcdc0af0b2c2d0cd5"


def _assert_array_equal(a1, a2, margin=None):
    """Element-wise equality (to `margin` if given), like RLlib's helper of that name."""
    for x, y in zip(a1, a2):
        if margin is None:
            assert x == y
        else:
            assert x == pytest.approx(y, abs=margin)


def test_box_space():
    env = gym.make("CartPole-v1")
    sp = gym_space_from_dict(gym_space_to_dict(env.observation_space))

    obs_space = env.observation_space
    _assert_array_equal(sp.low.tolist(), obs_space.low.tolist(), 0.001)
    _assert_array_equal(sp.high.tolist(), obs_space.high.tolist(), 0.001)
    _assert_array_equal(sp._shape, obs_space._shape)
    assert sp.dtype == obs_space.dtype


def test_discrete_space():
    env = gym.make("CartPole-v1")
    sp = gym_space_from_dict(gym_space_to_dict(env.action_space))
    assert sp.n == env.action_space.n


def test_multi_discrete_space():
    md_space = gym.spaces.MultiDiscrete(nvec=np.array([3, 4, 5]))
    sp = gym_space_from_dict(gym_space_to_dict(md_space))
    _assert_array_equal(sp.nvec, md_space.nvec, 0.001)
    assert md_space.dtype == sp.dtype


def test_tuple_space():
    env = gym.make("CartPole-v1")
    space = gym.spaces.Tuple(spaces=[env.observation_space, env.action_space])
    sp = gym_space_from_dict(gym_space_to_dict(space))

    _assert_array_equal(sp.spaces[0].low.tolist(), space.spaces[0].low.tolist(), 0.001)
    _assert_array_equal(sp.spaces[0].high.tolist(), space.spaces[0].high.tolist(), 0.001)
    _assert_array_equal(sp.spaces[0]._shape, space.spaces[0]._shape)
    assert sp.dtype == space.dtype
    assert sp.spaces[1].n == space.spaces[1].n


def test_dict_space():
    env = gym.make("CartPole-v1")
    space = gym.spaces.Dict(spaces={"obs": env.observation_space, "action": env.action_space})
    sp = gym_space_from_dict(gym_space_to_dict(space))

    _assert_array_equal(sp.spaces["obs"].low.tolist(), space.spaces["obs"].low.tolist(), 0.001)
    _assert_array_equal(sp.spaces["obs"].high.tolist(), space.spaces["obs"].high.tolist(),
                        0.001)
    _assert_array_equal(sp.spaces["obs"]._shape, space.spaces["obs"]._shape)
    assert sp.dtype == space.dtype
    assert sp.spaces["action"].n == space.spaces["action"].n


def test_simplex_space():
    space = Simplex(shape=(3, 4), concentration=np.array((1, 2, 1)))
    sp = gym_space_from_dict(gym_space_to_dict(space))

    _assert_array_equal(space.shape, sp.shape)
    _assert_array_equal(space.concentration, sp.concentration, 1e-7)
    assert space.dtype == sp.dtype


def test_repeated():
    space = Repeated(gym.spaces.Box(low=-1, high=1, shape=(1, 200)), max_len=8)
    sp = gym_space_from_dict(gym_space_to_dict(space))

    assert isinstance(sp.child_space, gym.spaces.Box)
    assert space.max_len == sp.max_len
    assert space.dtype == sp.dtype


def test_flex_dict():
    space = FlexDict({})
    space["box"] = gym.spaces.Box(low=-1, high=1, shape=(1, 200))
    space["discrete"] = gym.spaces.Discrete(2)
    space["tuple"] = gym.spaces.Tuple(
        (gym.spaces.Box(low=-1, high=1, shape=(1, 200)), gym.spaces.Discrete(2)))

    sp = gym_space_from_dict(gym_space_to_dict(space))

    assert isinstance(sp["box"], gym.spaces.Box)
    assert isinstance(sp["discrete"], gym.spaces.Discrete)
    assert isinstance(sp["tuple"], gym.spaces.Tuple)


def test_text():
    expected_space = gym.spaces.Text(min_length=3, max_length=10, charset="abc")
    sp = gym_space_from_dict(gym_space_to_dict(expected_space))

    assert expected_space.max_length == sp.max_length
    assert expected_space.min_length == sp.min_length
    # gymnasium >= 0.26 names the set `character_set` (RLlib checks either name).
    assert expected_space.character_set == sp.character_set


def test_original_space():
    space = gym.spaces.Box(low=0.0, high=1.0, shape=(10,))
    space.original_space = gym.spaces.Dict({
        "obs1": gym.spaces.Box(low=0.0, high=1.0, shape=(3,)),
        "obs2": gym.spaces.Box(low=0.0, high=1.0, shape=(7,)),
    })

    sp = space_from_dict(space_to_dict(space))

    assert isinstance(sp, gym.spaces.Box)
    assert isinstance(sp.original_space, gym.spaces.Dict)
    assert isinstance(sp.original_space["obs1"], gym.spaces.Box)
    assert isinstance(sp.original_space["obs2"], gym.spaces.Box)
