"""StatelessCartPole: CartPole-v1 with only the cart position and the pole angle."""

import gymnasium as gym
import numpy as np

from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator
from tfrl.examples.envs.stateless_cartpole import ENV_ID, StatelessCartPole


def test_observes_position_and_angle_of_cartpole_with_the_same_dynamics():
    stateless, full = gym.make(ENV_ID), gym.make("CartPole-v1")
    assert stateless.observation_space.shape == (2,)
    np.testing.assert_array_equal(stateless.observation_space.high,
                                  full.observation_space.high[[0, 2]])
    obs, _ = stateless.reset(seed=5)
    full_obs, _ = full.reset(seed=5)
    np.testing.assert_array_equal(obs, full_obs[[0, 2]])
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        action = int(rng.integers(2))
        obs, reward, terminated, truncated, _ = stateless.step(action)
        full_obs, full_reward, full_terminated, full_truncated, _ = full.step(action)
        np.testing.assert_array_equal(obs, full_obs[[0, 2]])
        assert obs.dtype == np.float32 and stateless.observation_space.contains(obs)
        assert (reward, terminated, truncated) == (full_reward, full_terminated, full_truncated)
        steps += 1
        if terminated or truncated:
            break
    assert terminated and steps > 1
    assert stateless.spec.max_episode_steps == 500


def test_the_cli_name_makes_it_through_the_env_registry():
    env = get_env_creator("tfrl.examples.envs:StatelessCartPole-v1")(EnvContext({}, 0))
    assert isinstance(env.unwrapped, gym.Env) and env.observation_space.shape == (2,)
    wrappers = [env]
    while isinstance(wrappers[-1], gym.Wrapper):
        wrappers.append(wrappers[-1].env)
    assert any(isinstance(w, StatelessCartPole) for w in wrappers)
    assert env.spec.max_episode_steps == 500
