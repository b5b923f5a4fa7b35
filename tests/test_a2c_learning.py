"""A2C learns CartPole-v1 (mean return >= 150)."""

import pytest

from tfrl.algorithms.a2c import A2C

pytestmark = pytest.mark.learning


def test_a2c_cartpole():
    algo = A2C(config={"env": "CartPole-v1", "num_envs_per_worker": 8,
                       "rollout_fragment_length": 8, "train_batch_size": 64, "lr": 1e-3,
                       "gamma": 0.99, "grad_clip": 0.5, "entropy_coeff": 0.0,
                       "min_iter_time_s": 0, "model": {"fcnet_hiddens": [64, 64]}, "seed": 0})
    result = {"episode_reward_mean": 0.0, "timesteps_total": 0}
    while result["timesteps_total"] < 100_000 and not result["episode_reward_mean"] >= 150:
        result = algo.train()
    algo.stop()
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]
