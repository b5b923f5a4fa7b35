"""Save/restore in the middle of training continues exactly; same seed, same run."""

import numpy as np
import pytest

from tfrl.algorithms.dqn import DQN
from tfrl.algorithms.ppo import PPO

import test_algorithm

pytestmark = pytest.mark.slow
assert test_algorithm.FixedStartCartPole  # importing it registers 'fixed_start_cartpole'

# The env restarts every episode from the same state and batches hold whole episodes,
# so the env carries no state across sample() calls (see Algorithm.save).
CONFIG = {"env": "fixed_start_cartpole", "num_workers": 0, "num_envs_per_worker": 1,
          "batch_mode": "complete_episodes", "rollout_fragment_length": 16,
          "train_batch_size": 64, "sgd_minibatch_size": 32, "num_sgd_iter": 2,
          "model": {"fcnet_hiddens": [16]}, "seed": 1, "kl_coeff": 0.2,
          "lr_schedule": [[0, 1e-3], [1000, 1e-4]]}


def trace(result):
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    return (result["timesteps_total"], stats["total_loss"], stats["kl"], stats["cur_kl_coeff"],
            stats["cur_lr"], result["episode_reward_mean"], result["episodes_total"])


def test_restore_mid_training_continues_like_uninterrupted_run(tmp_path):
    algo = PPO(config=CONFIG)
    for _ in range(2):
        algo.train()
    path = algo.save(str(tmp_path))
    uninterrupted = [trace(algo.train()) for _ in range(3)]
    weights = algo.get_weights()["default_policy"]
    algo.stop()

    restored = PPO(config=CONFIG)
    restored.restore(path)
    assert restored.iteration == 2
    assert [trace(restored.train()) for _ in range(3)] == uninterrupted
    for a, b in zip(weights, restored.get_weights()["default_policy"]):
        np.testing.assert_array_equal(a, b)
    restored.stop()


def test_restored_iteration_samples_the_step_threshold_again(tmp_path):
    # min_sample_timesteps_per_iteration: an iteration lasts until that many env steps
    # were sampled since the last result. After a restore, "since" counts from the
    # restored counter (it counted from 0: the first iteration stopped after one round).
    config = {"env": "CartPole-v1", "seed": 0, "min_sample_timesteps_per_iteration": 32,
              "rollout_fragment_length": 4, "train_batch_size": 8,
              "num_steps_sampled_before_learning_starts": 0, "model": {"fcnet_hiddens": [8]}}
    algo = DQN(config=config)
    algo.train()
    path = algo.save(str(tmp_path))
    second = algo.train()
    algo.stop()
    restored = DQN(config=config)
    restored.restore(path)
    again = restored.train()
    restored.stop()
    assert second["timesteps_total"] == 64
    assert again["timesteps_total"] == 64 and again["counters"] == second["counters"]


def test_same_seed_same_losses_and_returns():
    config = {**CONFIG, "env": "CartPole-v1", "batch_mode": "truncate_episodes",
              "num_envs_per_worker": 2, "seed": 7}
    runs = []
    for _ in range(2):
        algo = PPO(config=config)
        runs.append([trace(algo.train())[:-1] for _ in range(3)])
        algo.stop()
    assert runs[0] == runs[1]
    other = PPO(config={**config, "seed": 8})
    assert [trace(other.train())[:-1] for _ in range(3)] != runs[0]
    other.stop()
