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


@pytest.mark.parametrize("value,message", [
    ([0.0, 1e39], "observation[1] is 1e+39, outside the float32 range [-3.4028235e+38, "
                  "3.4028235e+38] observation is stored in (the space is Box(-inf, inf, (2,), "
                  "float32))"),
    ([-1e300, 0.0], "observation[0] is -1e+300, outside the float32 range"),
    (np.array([0.0, 3.5e38], np.float64), "observation[1] is 3.5e+38, outside the float32"),
])
def test_observation_overflowing_float32_is_refused(value, message):
    """Issue 29: a float64 that overflows the Box's float32 is out of range (it would be
    inf in the batch), though bounds are otherwise not checked for observations."""
    space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert message in observation_error(space, value)
    assert observation_error(space, [3.4e38, -3.4e38]) is None  # fits float32
    assert observation_error(gym.spaces.Box(-np.inf, np.inf, (2,), np.float64), value) is None


def test_overflow_checked_in_nested_spaces_and_actions():
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)})
    assert observation_error(space, {"pos": [1e39, 0.0]}) == (
        "observation['pos'][0] is 1e+39, outside the float32 range "
        "[-3.4028235e+38, 3.4028235e+38] observation['pos'] is stored in (the space is "
        "Box(-inf, inf, (2,), float32))")
    box = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    assert action_error(box, [1e39]) == (
        "action[0] is 1e+39, outside the float32 range [-3.4028235e+38, 3.4028235e+38] "
        "action is stored in (the space is Box(-inf, inf, (1,), float32))")
    # NaN and inf are not this check's: the sampler and server refuse non-finite values.
    assert observation_error(space["pos"], [np.inf, np.nan]) is None
    assert action_error(box, [1e38]) is None


def test_external_env_refuses_overflowing_observation():
    """The external env's observation path (ExternalEnv.log_returns/get_action) refuses
    it where it enters, as the server and the sampler do."""
    from tfrl.env.external_env import ExternalEnv

    env = ExternalEnv(gym.spaces.Discrete(2), gym.spaces.Box(-np.inf, np.inf, (2,), np.float32))
    eid = env.start_episode(training_enabled=False)
    with pytest.raises(ValueError, match="1e\\+39, outside the float32 range"):
        env.log_action(eid, [0.0, 1e39], 0)
