"""PG learns CartPole-v1 (mean return >= 150)."""

import pytest

from learning_helpers import CARTPOLE, train_to_reward
from tfrl.algorithms.pg import PG

pytestmark = pytest.mark.learning


def test_pg_cartpole():
    algo = PG(config={**CARTPOLE, "rollout_fragment_length": 64, "train_batch_size": 512,
                      "lr": 0.005})
    result = train_to_reward(algo, 150)
    assert result["episode_reward_mean"] >= 150, result["episode_reward_mean"]
