"""PPO learns MinAtar Breakout from pixels: at least triples a random policy's mean return
within 200k env steps (the tuned example's settings, seeded)."""

import os

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minatar")

from tfrl.algorithms.ppo import PPO  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.env.registry import register_suite  # noqa: E402
from learning_helpers import train_to_reward  # noqa: E402

pytestmark = pytest.mark.learning

ENV = "MinAtar/Breakout-v1"
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "ppo_minatar_breakout.yaml")


def random_mean_return(episodes=300, seed=0):
    """The mean return of uniformly random actions (measured: 0.47 for seed 0)."""
    assert register_suite(ENV)
    env = gym.make(ENV)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    returns = []
    for _ in range(episodes):
        env.reset()
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total, done = total + reward, terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def test_ppo_triples_a_random_policy_on_minatar_breakout():
    baseline = random_mean_return()
    assert 0.2 < baseline < 1.0, baseline
    config = build_config(resolve_experiment(TUNED, overrides=["seed=0"]))
    result = train_to_reward(PPO(config=config), 3 * baseline, max_steps=200_000)
    # episode_reward_mean: the mean over the last 100 episodes.
    assert result["episode_reward_mean"] >= 3 * baseline, (result["episode_reward_mean"],
                                                           baseline)
    assert result["timesteps_total"] <= 200_000
