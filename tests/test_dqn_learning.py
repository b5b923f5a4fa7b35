"""DQN learns CartPole-v1 with the tuned example (tfrl/tuned/dqn_cartpole.yaml): mean
return >= 400 within 50k env steps for 3 of 3 seeds (learning_long), and, in the
default run, >= 100 within 12k steps (seed 0)."""

import os

import pytest

from tfrl.algorithms.dqn import DQN
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = pytest.mark.learning

MAX_STEPS = 50_000
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "dqn_cartpole.yaml")


def train_until(seed, bar, max_steps):
    """The tuned file's DQN trained until the mean return (over its last
    metrics_smoothing_episodes episodes) reaches `bar` or `max_steps` env steps pass."""
    algo = DQN(config=build_config(resolve_experiment(TUNED, overrides=[f"seed={seed}"])))
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    try:
        while result["timesteps_total"] < max_steps:
            result = algo.train()
            if result["episode_reward_mean"] >= bar:
                break
    finally:
        algo.stop()
    return result


# Seed 0 costs ~100 CPU-s (128 gradient steps per 256 env steps until ~28k steps):
# learning_long, with the rest of the DQN family.
@pytest.mark.learning_long
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.more_seeds),
                                  pytest.param(2, marks=pytest.mark.more_seeds)])
def test_dqn_reaches_400_on_cartpole(seed):
    result = train_until(seed, 400.0, MAX_STEPS)
    assert result["episode_reward_mean"] >= 400.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= MAX_STEPS


def test_dqn_reaches_100_on_cartpole_within_12k_steps():
    # The default run's DQN learning check (~20 CPU-s; a random policy's mean is about
    # 22). Measured (2026-11-29, the tuned settings): 100 first reached after 5,120-6,144
    # steps for seeds 0-4, and for seeds 0, 1, 2, 5 and 6 with oneDNN off
    # (TF_ENABLE_ONEDNN_OPTS=0). A bar of 150 would not hold with margin: seed 6 (oneDNN
    # off) reached it after 12,288 steps, seed 5 not within 12k.
    result = train_until(0, 100.0, 12_000)
    assert result["episode_reward_mean"] >= 100.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= 12_000
