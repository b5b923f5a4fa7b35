"""PPO learns: CartPole-v1 solved within 100k env steps for 3 seeds; Pendulum improves."""

import pytest

from tfrl.algorithms.ppo import PPO, PPOConfig

pytestmark = pytest.mark.learning

CARTPOLE_STEPS = 100_000


def cartpole_config(seed):
    # RL Baselines3 Zoo's tuned CartPole PPO (the bench's settings), with SB3's
    # orthogonal initialization of the hidden layers (gain sqrt(2)).
    return PPOConfig.from_dict({
        "env": "CartPole-v1", "num_workers": 0, "num_envs_per_worker": 8,
        "rollout_fragment_length": 32, "train_batch_size": 256, "sgd_minibatch_size": 256,
        "num_sgd_iter": 20, "gamma": 0.98, "lambda": 0.8, "clip_param": 0.2,
        "vf_clip_param": 1e6, "vf_loss_coeff": 0.5, "entropy_coeff": 0.0, "kl_coeff": 0.0,
        "grad_clip": 0.5, "lr": 1e-3, "lr_schedule": [[0, 1e-3], [CARTPOLE_STEPS, 0.0]],
        "model": {"fcnet_hiddens": [64, 64], "fcnet_weights_initializer": "orthogonal",
                  "fcnet_weights_initializer_config": {"gain": 1.41421356}}, "seed": seed})


def train_until(algo, target, max_steps):
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    while result["timesteps_total"] < max_steps:
        result = algo.train()
        if result["episode_reward_mean"] >= target:
            break
    algo.stop()
    return result


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_solves_cartpole(seed):
    result = train_until(PPO(config=cartpole_config(seed)), 475.0, CARTPOLE_STEPS)
    # episode_reward_mean: the mean over the last 100 episodes.
    assert result["episode_reward_mean"] >= 475.0, result["episode_reward_mean"]
    assert result["timesteps_total"] <= CARTPOLE_STEPS


@pytest.mark.slow
def test_ppo_pendulum_improves():
    config = PPOConfig.from_dict({
        "env": "Pendulum-v1", "num_workers": 0, "num_envs_per_worker": 4,
        "rollout_fragment_length": 256, "train_batch_size": 1024, "sgd_minibatch_size": 64,
        "num_sgd_iter": 10, "gamma": 0.9, "lambda": 0.95, "clip_param": 0.2,
        "vf_clip_param": 1e6, "vf_loss_coeff": 0.5, "kl_coeff": 0.0, "grad_clip": 0.5,
        "lr": 1e-3, "observation_filter": "MeanStdFilter",
        "model": {"fcnet_hiddens": [64, 64], "free_log_std": False}, "seed": 0})
    result = train_until(PPO(config=config), -400.0, 200_000)
    assert result["episode_reward_mean"] >= -400.0, result["episode_reward_mean"]
