"""TD3 learns Pendulum-v1: mean return >= -250 within 20k env steps for 3 of 3 seeds, with
the tuned example (tfrl/tuned/td3_pendulum.yaml)."""

import os

import pytest

from tfrl.algorithms.td3 import TD3
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = pytest.mark.learning

MAX_STEPS = 20_000
TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "tfrl", "tuned", "td3_pendulum.yaml")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.more_seeds),
                                  pytest.param(2, marks=pytest.mark.more_seeds)])
def test_td3_reaches_minus_250_on_pendulum(seed):
    algo = TD3(config=build_config(resolve_experiment(TUNED, overrides=[f"seed={seed}"])))
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    try:
        while result["timesteps_total"] < MAX_STEPS:
            result = algo.train()
            print(result["timesteps_total"], result["episode_reward_mean"])
            if result["episode_reward_mean"] >= -250.0:
                break
    finally:
        algo.stop()
    # episode_reward_mean: the mean over the last metrics_smoothing_episodes episodes.
    assert result["episode_reward_mean"] >= -250.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= MAX_STEPS
