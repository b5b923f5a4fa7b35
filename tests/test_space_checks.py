"""observation_error / action_error: the messages that reject bad simulator data."""

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.space_checks import action_error, observation_error

DICT = gym.spaces.Dict({"pos": gym.spaces.Box(0, 1, (2,)), "id": gym.spaces.Discrete(3)})
TUPLE = gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,))])


@pytest.mark.parametrize("space,obs", [
    (DICT, {"pos": [0.5, 0.5], "id": 2}),
    (TUPLE, (1, np.zeros(1))),
    (gym.spaces.Box(0, 1, (2,)), [5.0, -3.0]),  # bounds are not checked for observations
    (gym.spaces.MultiBinary(3), [0, 1, 1]),
    (None, object()),
])
def test_good_observations(space, obs):
    assert observation_error(space, obs) is None


@pytest.mark.parametrize("space,obs,message", [
    (DICT, [1, 2], "observation is a list, expected a dict with keys ['id', 'pos']"),
    (DICT, {"pos": [0, 0]}, "observation has keys ['pos'], expected ['id', 'pos']"),
    (DICT, {"pos": [0, 0, 0], "id": 1}, "observation['pos'] has shape (3,), expected (2,)"),
    (TUPLE, (1,), "observation is (1,), expected a tuple of 2 items"),
    (TUPLE, (1, np.zeros(3)), "observation[1] has shape (3,), expected (1,)"),
    (gym.spaces.Box(0, 1, (2,)), ["a", "b"], "observation has dtype <U1, expected a number"),
    (gym.spaces.Box(0, 1, (2,)), [[1], [1, 2]], "which is not array-like"),
    (gym.spaces.Discrete(3), [1], "observation has shape (1,), expected ()"),
    (gym.spaces.Text(3), 7, "observation 7 is not in Text"),
])
def test_bad_observations(space, obs, message):
    assert message in observation_error(space, obs)


def test_action_error():
    assert action_error(gym.spaces.Discrete(3), 2) is None
    assert action_error(gym.spaces.Discrete(3), np.int32(1)) is None
    assert action_error(gym.spaces.Box(-1, 1, (2,)), [0.5, -0.5]) is None
    assert "action [2.0, 0.0] is not in the action space Box" in action_error(
        gym.spaces.Box(-1, 1, (2,)), [2.0, 0.0])
    assert "action 1.5 is not in the action space Discrete(3)" in action_error(gym.spaces.Discrete(3), 1.5)
    assert "action has shape (3,), expected (2,)" in action_error(gym.spaces.Box(-1, 1, (2,)), [0, 0, 0])
    assert action_error(None, "anything") is None
