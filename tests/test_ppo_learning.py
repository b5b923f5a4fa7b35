"""PPO learns: CartPole-v1 solved within 100k env steps for 3 seeds; Pendulum improves."""

import os

import pytest

from tfrl.algorithms.ppo import PPO, PPOConfig
from tfrl.cli.experiment import build_config, resolve_experiment

pytestmark = pytest.mark.learning

CARTPOLE_STEPS = 100_000
TUNED_CARTPOLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "tfrl", "tuned", "ppo_cartpole.yaml")


def cartpole_config(seed):
    # The tuned example (RL Baselines3 Zoo's CartPole PPO, the bench's settings).
    return build_config(resolve_experiment(TUNED_CARTPOLE, overrides=[f"seed={seed}"]))


def train_until(algo, target, max_steps):
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 0}
    while result["timesteps_total"] < max_steps:
        result = algo.train()
        if result["episode_reward_mean"] >= target:
            break
    algo.stop()
    return result


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.more_seeds),
                                  pytest.param(2, marks=pytest.mark.more_seeds)])
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
