"""PG learns CartPole-v1 (mean return >= 150)."""

import pytest

from tfrl.algorithms.pg import PG

pytestmark = pytest.mark.learning


def test_pg_cartpole():
    algo = PG(config={"env": "CartPole-v1", "num_envs_per_worker": 8,
                      "rollout_fragment_length": 64, "train_batch_size": 512, "lr": 0.005,
                      "gamma": 0.99, "model": {"fcnet_hiddens": [64, 64]}, "seed": 0})
    result = {"episode_reward_mean": 0.0, "timesteps_total": 0}
    while result["timesteps_total"] < 100_000 and not result["episode_reward_mean"] >= 150:
        result = algo.train()
    algo.stop()
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]
