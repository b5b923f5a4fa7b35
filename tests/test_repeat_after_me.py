"""The repeat-after-me memory env: rewards, spaces, optimum and chance, registration."""

import os

import gymnasium as gym
import numpy as np
import pytest

from tfrl.cli.experiment import build_config, check_names, resolve_experiment
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator
from tfrl.examples.envs import RepeatAfterMe

ENV_ID = "tfrl.examples.envs:RepeatAfterMe-v0"
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "ppo_lstm_repeat_after_me.yaml")


def _run(env, policy, seed):
    """One episode; `policy(shown_so_far)` answers; returns (rewards, flags)."""
    obs, _ = env.reset(seed=seed)
    shown, rewards, flags = [obs], [], []
    while True:
        obs, reward, terminated, truncated, _ = env.step(policy(shown))
        rewards.append(reward)
        flags.append((terminated, truncated))
        if terminated or truncated:
            return rewards, flags
        shown.append(obs)


@pytest.mark.parametrize("delay,num_symbols,episode_len", [(1, 2, 20), (3, 4, 10), (2, 3, 3)])
def test_oracle_gets_the_optimum_and_episodes_have_fixed_length(delay, num_symbols,
                                                                  episode_len):
    env = RepeatAfterMe(delay=delay, num_symbols=num_symbols, episode_len=episode_len)
    rewards, flags = _run(env, lambda shown: shown[-1 - delay] if len(shown) > delay else 0, 7)
    assert rewards == [0.0] * delay + [1.0] * (episode_len - delay)
    assert sum(rewards) == env.optimal_return == episode_len - delay
    assert flags == [(False, False)] * (episode_len - 1) + [(False, True)]


def test_a_wrong_answer_scores_minus_one():
    env = RepeatAfterMe(delay=1, num_symbols=2, episode_len=6)
    rewards, _ = _run(env, lambda shown: 1 - shown[-2] if len(shown) > 1 else 0, 3)
    assert rewards == [0.0] + [-1.0] * 5


@pytest.mark.parametrize("num_symbols,chance", [(2, 0.0), (4, -9.5)])
def test_a_memoryless_policy_scores_chance(num_symbols, chance):
    # Repeating the current symbol is right with probability 1/num_symbols.
    env = RepeatAfterMe(delay=1, num_symbols=num_symbols, episode_len=20)
    assert env.chance_return == chance
    returns = [sum(_run(env, lambda shown: shown[-1], seed)[0]) for seed in range(2000)]
    # The mean of 2000 returns (each a sum of 19 answers, std <= 4.4) has std <= 0.1.
    assert abs(np.mean(returns) - chance) < 0.5


def test_observations_discrete_or_one_hot_and_seeded():
    discrete = RepeatAfterMe(num_symbols=3)
    one_hot = RepeatAfterMe(num_symbols=3, one_hot=True)
    assert discrete.observation_space == gym.spaces.Discrete(3)
    assert one_hot.observation_space == gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    assert discrete.action_space == one_hot.action_space == gym.spaces.Discrete(3)
    symbols, vectors = [], []
    for env, out in ((discrete, symbols), (one_hot, vectors)):
        obs, _ = env.reset(seed=11)
        for _ in range(10):
            assert env.observation_space.contains(obs)
            out.append(obs)
            obs = env.step(0)[0]
    # Same seed, same symbols, whatever their encoding.
    assert [int(np.argmax(v)) for v in vectors] == symbols
    assert len(set(symbols)) == 3
    np.testing.assert_array_equal(vectors[0], np.eye(3, dtype=np.float32)[symbols[0]])


@pytest.mark.parametrize("kwargs,message", [
    ({"delay": 0}, r"^RepeatAfterMe needs delay >= 1 \(an int\); received 0\.$"),
    ({"delay": 1.5}, r"^RepeatAfterMe needs delay >= 1 \(an int\); received 1\.5\.$"),
    ({"num_symbols": 1}, r"^RepeatAfterMe needs num_symbols >= 2 \(an int\); received 1\.$"),
    ({"delay": 3, "episode_len": 3},
     r"^RepeatAfterMe needs episode_len > delay \(3\) \(an int\); received 3\.$"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RepeatAfterMe(**kwargs)


def test_made_by_name_through_gymnasium_and_tfrl():
    env = gym.make(ENV_ID, delay=2, episode_len=5)
    assert env.unwrapped.optimal_return == 3.0
    env = get_env_creator(ENV_ID)(EnvContext({"delay": 3, "one_hot": True}, worker_index=0))
    assert env.unwrapped.delay == 3 and env.observation_space.shape == (2,)


def test_cli_accepts_the_env_and_the_tuned_file():
    exp = resolve_experiment(TUNED)
    check_names(exp)  # raises CliError for an unknown env
    config = build_config(exp)
    assert config.env == ENV_ID
    assert config.model["use_lstm"] is True
    assert config.env_config == {"delay": 1, "num_symbols": 2, "episode_len": 20}
