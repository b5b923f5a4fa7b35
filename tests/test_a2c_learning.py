"""A2C learns CartPole-v1 (mean return >= 150)."""

import pytest

from learning_helpers import CARTPOLE, train_to_reward
from tfrl.algorithms.a2c import A2C

pytestmark = pytest.mark.learning


def test_a2c_cartpole():
    algo = A2C(config={**CARTPOLE, "rollout_fragment_length": 8, "train_batch_size": 64,
                       "lr": 1e-3, "grad_clip": 0.5, "entropy_coeff": 0.0, "min_iter_time_s": 0})
    result = train_to_reward(algo, 150)
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]
