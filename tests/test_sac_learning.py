"""SAC learns: mean return >= -250 on Pendulum-v1 within 20k env steps, and the discrete
variant >= 200 on CartPole-v1 within 50k, each for 3 of 3 seeds, with the tuned examples
(tfrl/tuned/sac_pendulum.yaml, sac_cartpole.yaml). Seed 0 of each runs in CI; seeds
1 and 2 are also marked `slow` (each run takes 1-2 minutes on a busy 2-core machine)."""

import os

import pytest

from tfrl.algorithms.sac import SAC
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = pytest.mark.learning

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned")
SEEDS = [0, pytest.param(1, marks=[pytest.mark.slow, pytest.mark.more_seeds]),
         pytest.param(2, marks=[pytest.mark.slow, pytest.mark.more_seeds])]


def train_until(tuned: str, seed: int, threshold: float, max_steps: int) -> dict:
    algo = SAC(config=build_config(resolve_experiment(os.path.join(TUNED, tuned),
                                                      overrides=[f"seed={seed}"])))
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    try:
        while result["timesteps_total"] < max_steps:
            result = algo.train()
            if result["episode_reward_mean"] >= threshold:
                break
    finally:
        algo.stop()
    return result


@pytest.mark.parametrize("seed", SEEDS)
def test_sac_reaches_minus_250_on_pendulum(seed):
    result = train_until("sac_pendulum.yaml", seed, -250.0, 20_000)
    # episode_reward_mean: the mean over the last metrics_smoothing_episodes episodes.
    assert result["episode_reward_mean"] >= -250.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= 20_000


@pytest.mark.parametrize("seed", SEEDS)
def test_discrete_sac_reaches_200_on_cartpole(seed):
    result = train_until("sac_cartpole.yaml", seed, 200.0, 50_000)
    assert result["episode_reward_mean"] >= 200.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= 50_000
